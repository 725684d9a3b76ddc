"""The review queue's proposed supersede in a real browser (Playwright driving Debian's
headless Chromium): the diff and the cited message are shown, markup in them never runs, and
approving it makes the new value what readers read."""

from __future__ import annotations

import pytest

from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from facts.services import fact_create
from tests.approvals.conftest import reviewer_create
from tests.conftest import console_login, screenshot
from tests.extraction.conftest import update
from tests.recall.conftest import conversation_create

QUEUE = "/console/approvals/approval/"


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_reads_the_diff_and_the_evidence_and_approves_the_proposal(
    live_server, page, api, llm, declared
):
    # given a memory, and an extraction that proposes its next value from what the person said
    fact_create(
        principal=declared.app.principal,
        type="preference",
        content={"text": "Prefers phone calls."},
        scope={"project_id": declared.project.id, "participant_id": "cust-1"},
    )
    said = 'Email me instead.<img src=x onerror="window.__pwned=1">'
    conversation_create(declared, "conv-b", ("user", said), participant_id="cust-1")
    llm.answer(lambda shown: [update(shown["existing_memories"][0]["id"], "Prefers email.", [1])])
    job = extraction_request(principal=declared.app.principal, conversation_id="conv-b").job
    extract_conversation(str(job.id), tenant_id=str(declared.tenant.id))
    reviewer = reviewer_create(declared)
    # when the reviewer opens the queue
    page.set_viewport_size({"width": 1600, "height": 900})
    console_login(page, live_server.url, reviewer.user.username, "pw")
    page.goto(live_server.url + QUEUE)
    page.wait_for_selector(".review-diff")
    # then the change reads as struck and inserted words, beside the message it rests on
    assert page.inner_text(".review-diff del") == "phone calls"
    assert page.inner_text(".review-diff ins") == "email"
    assert "Email me instead." in page.inner_text(".review-evidence")
    assert page.evaluate("window.__pwned") is None
    shot = screenshot(page, "review-queue-proposal")
    # and approving it supersedes the old value
    page.click('button[data-action="approve"]')
    page.wait_for_selector(".messagelist .success")
    facts = api.get("/v1/facts", **declared.app.headers).json()["facts"]
    assert [f["content"]["text"] for f in facts] == ["Prefers email."]
    assert shot.stat().st_size > 0
