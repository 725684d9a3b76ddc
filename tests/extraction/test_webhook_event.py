"""`extraction.applied`: an extraction job that wrote memories is announced with its ids and
counts, after the facts it wrote announced themselves, and names neither the person nor what
the model extracted (webhooks/)."""

from __future__ import annotations

import json

import pytest

from extraction.models import JobStatus
from tests.extraction.conftest import add, requested, run_task
from tests.webhooks.receiver import receiver_running
from tests.webhooks.test_webhooks import register, send_due
from webhooks import outbox
from webhooks.models import OutboxEvent

pytestmark = pytest.mark.django_db


def test_an_applied_extraction_is_announced_after_the_facts_it_wrote(
    api, llm, declared, conversation, settings
):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    outbox._quiet.clear()
    with receiver_running() as receiver:
        register(api, declared, receiver.url, ["extraction.applied", "fact.changed"])
        llm.answer(lambda shown: [add("note", "Lives in Lisbon.", [4])])
        job = run_task(requested(declared))
        assert job.status == JobStatus.APPLIED, (job.error_code, job.error)
        # then the fact it wrote, then the job, were announced
        events = list(OutboxEvent.objects.order_by("created_at"))
        assert [e.kind for e in events] == ["fact.changed", "extraction.applied"]
        applied = events[1].data
        assert applied["job_id"] == str(job.id)
        assert applied["decisions"]["created"] == 1
        assert applied["fact_ids"] == [events[0].data["fact_id"]]
        # and what the receiver got names neither the person nor the memory
        send_due(declared)
        bodies = [r.body for r in receiver.wait_for(2)]
    assert not [b for b in bodies if b"cust-1" in b or b"Lisbon" in b]
    assert json.loads(bodies[1])["type"] == "extraction.applied"
