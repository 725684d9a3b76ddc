"""The scripted demo model (config/scripted_model.py), over real HTTP: an extraction goes
through it end to end, into review, and it says it is scripted wherever kindmem shows a model."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from approvals.models import Approval, ApprovalStatus
from config.scripted_model import NOTE, SCRIPTED_MODEL, server
from extraction.models import JobStatus
from extraction.provider import _configured
from extraction.services import extraction_settings_set
from facts.models import Revision
from tests.extraction.conftest import requested, run_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def scripted(settings: Any) -> Iterator[str]:
    httpd = server()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    settings.LLM_URL, settings.LLM_MODEL = url, SCRIPTED_MODEL
    settings.LLM_RETRIES = 0
    _configured.cache_clear()
    yield url
    httpd.shutdown()
    _configured.cache_clear()


def test_every_answer_says_it_is_scripted(scripted) -> None:
    # when: asked as an OpenAI-compatible server is
    body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "{}"}]}).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{scripted}/chat/completions", body, headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the test server
        answer = json.load(response)
    # then: its model name and its answer say it is not a language model
    assert answer["model"] == SCRIPTED_MODEL
    assert json.loads(answer["choices"][0]["message"]["content"])["scripted"] == NOTE
    with urllib.request.urlopen(f"{scripted}/models", timeout=10) as response:  # noqa: S310
        assert json.load(response)["data"][0]["id"] == SCRIPTED_MODEL


def test_an_extraction_through_it_lands_in_review_and_names_the_scripted_model(
    api, scripted, conversation, declared
) -> None:
    # given: the tenant sends every extracted memory to review
    extraction_settings_set(tenant_id=declared.tenant.id, review_all=True)
    # when: the conversation ("please email me rather than call", "I live in Lisbon now") is
    # extracted through the scripted model
    job = run_task(requested(declared))
    # then: the job applied, under the scripted model's name, and its memory waits for review
    assert job.status == JobStatus.APPLIED, job.error
    assert job.model == SCRIPTED_MODEL
    written = Revision.objects.filter(tenant_id=declared.tenant.id)
    assert [r.content["text"] for r in written] == ["Lives in Lisbon."]
    approval = Approval.objects.get(revision=written.get())
    assert approval.status == ApprovalStatus.PENDING
    assert "extracted" in approval.reasons
    # and the API's answer about the job names the scripted model
    jobs = api.get("/v1/conversations/conv-1/extract", **declared.app.headers).json()
    assert jobs["jobs"][0]["model"] == SCRIPTED_MODEL
