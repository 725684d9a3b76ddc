"""The Python client's extraction methods on the real app (in-process WSGI), and its retry
rule: a 429 `extraction-quota` is not a moment's wait, so it is raised at once."""

from __future__ import annotations

import httpx
import kindmem_client
import pytest
from kindmem_client import ExtractionQuota, ExtractionUnavailable, RetryPolicy

from tests.clients.conftest import keep_the_tests_connection, wsgi_client
from tests.extraction.conftest import add

# the in-process client's requests run in this test's transaction
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures(keep_the_tests_connection.__name__)]


def test_the_client_asks_for_an_extraction_and_reads_how_it_went(llm, declared, conversation):
    from extraction.tasks import extract_conversation

    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    with wsgi_client(declared.app.token) as app:
        asked = app.extract("conv-1")
        assert asked["outcome"] == "queued"
        job = asked["job"]
        assert job is not None
        extract_conversation(job["id"], tenant_id=str(declared.tenant.id))
        state = app.extractions("conv-1")
    assert state["extracted_through"] == 4
    [done] = state["jobs"]
    assert done["status"] == "applied"
    assert [d["text"] for d in done["decisions"]] == ["Prefers email."]


def test_the_client_raises_the_extraction_errors_as_their_classes(settings, declared, conversation):
    settings.LLM_URL = settings.LLM_MODEL = ""
    with wsgi_client(declared.app.token) as app, pytest.raises(ExtractionUnavailable) as raised:
        app.extract("conv-1")
    assert raised.value.status_code == 503


def test_an_extraction_quota_is_raised_at_once_while_a_rate_limit_is_waited_for():
    def answer(code: str, retry_after: str | None) -> httpx.Response:
        headers = {"Retry-After": retry_after} if retry_after else {}
        body = {"code": code, "message": code, "details": None}
        return httpx.Response(429, json=body, headers=headers)

    policy = RetryPolicy()
    assert policy.wait_for(answer("rate-limited", "1"), 0) == 1.0
    assert policy.wait_for(answer("extraction-quota", "3600"), 0) is None
    assert policy.wait_for(answer("extraction-quota", None), 0) is None
    quota = kindmem_client.errors.error_from_response(answer("extraction-quota", "3600"))
    assert isinstance(quota, ExtractionQuota)
    assert quota.retry_after == 3600.0
