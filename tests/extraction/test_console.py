"""The review queue shows an extracted proposal as a reviewer needs it: the value it would
replace as a word diff, the messages it was derived from beside it, escaped; at the same cost
for one row and for many, audited as a read of the person."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from facts.services import fact_create
from tests.approvals.conftest import reviewer_create
from tests.extraction.conftest import update
from tests.recall.conftest import conversation_create

pytestmark = pytest.mark.django_db

QUEUE = "/console/approvals/approval/"


def propose(declared, participant: str, old_text: str, new_text: str, said: str) -> None:
    """A memory of `participant`, and an extraction of their conversation proposing its next
    value, citing what they said."""
    old = fact_create(
        principal=declared.app.principal,
        type="preference",
        content={"text": old_text},
        scope={"project_id": declared.project.id, "participant_id": participant},
    ).revision
    conversation_create(declared, f"conv-{participant}", ("user", said), participant_id=participant)
    job = extraction_request(
        principal=declared.app.principal, conversation_id=f"conv-{participant}"
    ).job
    assert job is not None
    extract_conversation(str(job.id), tenant_id=str(declared.tenant.id))
    job.refresh_from_db()
    assert job.status == "applied", (job.error_code, job.error, str(old.fact_id))


def test_a_proposed_supersede_shows_its_diff_and_its_evidence_escaped(llm, declared):
    llm.answer(
        lambda shown: [update(shown["existing_memories"][0]["id"], "Prefers <b>email</b>.", [1])]
    )
    propose(declared, "cust-1", "Prefers phone calls.", "", "Email me, <b>never</b> call!")
    console = Client()
    console.force_login(reviewer_create(declared).user)
    page = console.get(QUEUE).content.decode()
    # then the queue shows what it would replace, struck, and what it says, inserted
    assert '<div class="review-diff"' in page
    assert "<del>phone calls</del><ins>&lt;b&gt;email&lt;/b&gt;</ins>" in page
    # and the message it rests on, escaped
    assert "conv-cust-1#1" in page
    assert "Email me, &lt;b&gt;never&lt;/b&gt; call!" in page
    assert "<b>never</b>" not in page
    assert "contradiction" in page
    # and showing the message is a read of the person, in the audit stream
    event = AuditEvent.objects.get(endpoint="GET console approvals")
    assert event.subjects == ["participant:cust-1"]
    assert event.object_ids == ["conv-cust-1#1"]


def test_the_queue_costs_the_same_for_one_proposal_and_for_many(llm, declared):
    llm.answer(lambda shown: [update(shown["existing_memories"][0]["id"], "Prefers email.", [1])])
    console = Client()
    console.force_login(reviewer_create(declared).user)
    propose(declared, "p-0", "Prefers phone calls.", "", "Email me.")
    console.get(QUEUE)  # the session, content types and permissions, cached
    with CaptureQueriesContext(connection) as one:
        console.get(QUEUE)
    for i in range(1, 5):
        propose(declared, f"p-{i}", "Prefers phone calls.", "", "Email me.")
    with CaptureQueriesContext(connection) as five:
        page = console.get(QUEUE).content.decode()
    assert page.count('<div class="review-diff"') == 5
    assert len(five) == len(one)


def test_a_cited_message_gone_since_is_said_to_be_gone(llm, declared, api):
    llm.answer(lambda shown: [update(shown["existing_memories"][0]["id"], "Prefers email.", [1])])
    propose(declared, "cust-1", "Prefers phone calls.", "", "Email me.")
    api.delete("/v1/conversations/conv-cust-1/messages/1", **declared.app.headers)
    console = Client()
    console.force_login(reviewer_create(declared).user)
    page = console.get(QUEUE).content.decode()
    assert "conv-cust-1#1</span> <em>no longer there</em>" in page
    assert not AuditEvent.objects.filter(endpoint="GET console approvals").exists()
