"""Extraction after each appended batch, for the agents a tenant's settings name: the append
queues it in its own transaction, and never fails for it."""

from __future__ import annotations

import pytest

from extraction.metering import usage_day
from extraction.models import ExtractionJob, ExtractionSettings, ExtractionUsage, JobStatus
from facts.models import Revision
from tests.extraction.conftest import add
from tests.recall.conftest import messages_post

pytestmark = pytest.mark.django_db


def extract_after_append(world, *agents: str) -> None:
    ExtractionSettings.objects.create(tenant=world.tenant, extract_after_append=list(agents))


def test_an_append_for_a_named_agent_is_extracted_when_it_commits(
    api, llm, declared, run, eager_tasks, django_capture_on_commit_callbacks
):
    # given a tenant that extracts the support bot's conversations after each batch
    extract_after_append(declared, "support-bot")
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    eager_tasks()  # the queued task runs here, as a worker would
    # when the run appends a batch
    with django_capture_on_commit_callbacks(execute=True):
        response = messages_post(api, run.headers, "conv-1", ("user", "Email me, please."))
    # then the append answered as ever, and its extraction was queued and applied
    assert response.status_code == 201, response.json()
    job = ExtractionJob.objects.get()
    assert (job.requested_by, job.status) == ("after-append", JobStatus.APPLIED)
    assert Revision.objects.filter(content={"text": "Prefers email."}).count() == 1


def test_an_agent_the_settings_do_not_name_is_not_extracted(api, llm, declared, run):
    extract_after_append(declared, "another-bot")
    assert messages_post(api, run.headers, "conv-1", ("user", "hello")).status_code == 201
    assert not ExtractionJob.objects.exists()
    assert llm.requests == []


def test_without_a_model_an_append_queues_nothing(api, settings, declared, run):
    extract_after_append(declared, "support-bot")
    settings.LLM_URL = settings.LLM_MODEL = ""
    assert messages_post(api, run.headers, "conv-1", ("user", "hello")).status_code == 201
    assert not ExtractionJob.objects.exists()


def test_a_spent_cap_leaves_the_append_standing(api, settings, llm, declared, run):
    extract_after_append(declared, "support-bot")
    settings.EXTRACTION_TENANT_DAILY_TOKENS = 10
    ExtractionUsage.objects.create(
        tenant=declared.tenant, agent=declared.agent, day=usage_day(), tokens_in=10
    )
    response = messages_post(api, run.headers, "conv-1", ("user", "hello"))
    assert response.status_code == 201
    assert not ExtractionJob.objects.exists()


def test_a_batch_while_one_is_queued_adds_no_second_job(api, llm, declared, run):
    extract_after_append(declared, "support-bot")
    messages_post(api, run.headers, "conv-1", ("user", "one"))
    messages_post(api, run.headers, "conv-1", ("user", "two"))
    assert ExtractionJob.objects.count() == 1
