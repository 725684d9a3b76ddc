"""An erasure of a person leaves nothing of their extractions: the jobs (the refused answers
they keep), the decisions' texts, the watermark, the runs they wrote as, and what the jobs
wrote (a memory added, a project-wide insight, a proposed supersede and its approval).

Extraction has no erasure step of its own: its rows hang off the conversation (CASCADE), so
recall's step, which deletes the person's conversations, takes them; its meter counts tokens
per tenant, agent and day, naming no one. These tests hold that to the residue scan over every
text-like column, for each kind of target a conversation can be erased by."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.models import Approval
from extraction.models import ConversationExtraction, ExtractionDecision, ExtractionJob
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from facts.models import Fact
from facts.services import fact_create
from kindmem.access import Principal, PrincipalKind
from kindmem.models import Run
from privacy.erasure import erasure_run
from privacy.models import ErasureRequest, RequestStatus
from privacy.services import erasure_start
from tests.extraction.conftest import add, completion, update
from tests.privacy.conftest import residue_scan
from tests.recall.conftest import conversation_create

pytestmark = pytest.mark.django_db


def extracted(world: Any, conversation_id: str, principal: Any = None) -> ExtractionJob:
    """The conversation's extraction, asked for by the world's app (or `principal`) and run by
    the task."""
    principal = principal or world.app.principal
    job = extraction_request(principal=principal, conversation_id=conversation_id).job
    assert job is not None
    extract_conversation(str(job.id), tenant_id=str(world.tenant.id))
    job.refresh_from_db()
    return job


def erased(world: Any, kind: str, target: str) -> ErasureRequest:
    request = erasure_start(
        tenant_id=world.tenant.id,
        target_kind=kind,
        target_id=target,
        reason="the person asked",
        requested_by="admin:test",
    )
    return erasure_run(erasure_id=request.id)


def test_erasing_a_person_erases_their_extractions(llm, declared):
    # given a conversation of the person, one applied extraction and one refused answer
    person, marker = "participant-zqx-41", "zqxmarker"
    conversation_create(
        declared, "conv-zqx", ("user", f"I like {marker} tea."), participant_id=person
    )
    llm.answer(lambda shown: [add("preference", f"Likes {marker} tea.", [1])])
    applied = extraction_request(principal=declared.app.principal, conversation_id="conv-zqx").job
    extract_conversation(str(applied.id), tenant_id=str(declared.tenant.id))
    conversation_create(declared, "conv-zqx", ("user", "More."), participant_id=person)
    llm.default = lambda payload: completion(f"not json, but {marker}")
    refused = extraction_request(principal=declared.app.principal, conversation_id="conv-zqx").job
    extract_conversation(str(refused.id), tenant_id=str(declared.tenant.id))
    assert residue_scan([marker]) != []
    # when the person is erased
    request = erasure_start(
        tenant_id=declared.tenant.id,
        target_kind="participant",
        target_id=person,
        reason="the person asked",
        requested_by="admin:test",
    )
    done = erasure_run(erasure_id=request.id)
    # then nothing of theirs is left anywhere
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([person, marker]) == []
    assert not ExtractionJob.objects.exists()
    assert not ExtractionDecision.objects.exists()
    assert not ConversationExtraction.objects.exists()


def test_erasing_a_person_erases_the_supersede_extraction_proposed_and_what_it_inferred(
    llm, declared
):
    # given a memory of the person, and an extraction that proposes its next value (waiting
    # for a reviewer) and infers a project-wide insight and a note from what they said
    person, marker = "participant-qq-7", "qqmarker"
    old = fact_create(
        principal=declared.app.principal,
        type="preference",
        content={"text": f"Prefers {marker} phone calls."},
        scope={"project_id": declared.project.id, "participant_id": person},
    ).revision
    conversation_create(
        declared, "conv-qq", ("user", f"Email me, I like {marker} tea."), participant_id=person
    )
    llm.answer(
        lambda shown: [
            add("insight", f"Customers like {marker} tea.", [1]),
            add("note", f"Asked about {marker} tea.", [1]),
            update(str(old.fact_id), f"Prefers {marker} email.", [1]),
        ]
    )
    job = extracted(declared, "conv-qq")
    assert job.status == "applied", (job.error_code, job.error)
    [proposed] = ExtractionDecision.objects.filter(outcome="proposed")
    assert Approval.objects.filter(pk=proposed.approval_id).exists()
    # when the person is erased
    done = erased(declared, "participant", person)
    # then the proposal, its approval, the insight and the note are gone with the rest
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([person, marker]) == []
    assert not Approval.objects.filter(pk=proposed.approval_id).exists()
    assert not ExtractionJob.objects.exists()
    assert not ExtractionDecision.objects.exists()


def test_erasing_a_kindgi_user_erases_the_extractions_of_their_conversations(llm, declared):
    # given a conversation of a Kindgi user (no end user), extracted
    marker, user = "uumarker", declared.user
    conversation_create(declared, "conv-uu", ("user", f"I like {marker} tea."), user=user)
    llm.answer(lambda shown: [add("note", f"Likes {marker} tea.", [1])])
    # (asked by the user's own run: an app's extraction has no place for the user's thread)
    mine = Run.objects.filter(user=user, thread_id="conv-uu", minted_by__isnull=False).get()
    own = Principal(kind=PrincipalKind.RUN, tenant_id=user.tenant_id, run=mine, user=user)
    assert extracted(declared, "conv-uu", own).status == "applied"
    # when the user is erased
    done = erased(declared, "user", str(user.id))
    # then nothing of the extraction is left; their id only on their account (which an
    # erasure leaves to the tenant: their user row, key and memberships)
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([marker]) == []
    assert {table for table, _, _ in residue_scan([str(user.id)])} == {
        "kindmem_user",
        "kindmem_apikey",
        "kindmem_user_projects",
    }
    assert not ExtractionJob.objects.exists()
    assert not ExtractionDecision.objects.exists()
    assert not ConversationExtraction.objects.exists()


def test_erasing_a_conversation_erases_its_extractions_and_no_others(llm, declared):
    # given two conversations of one person, each extracted into a note of its thread
    person = "participant-cc-9"
    for thread in ("conv-cc-1", "conv-cc-2"):
        conversation_create(
            declared, thread, ("user", f"I like tea, says {thread}."), participant_id=person
        )
    llm.answer(lambda shown: [add("note", f"Likes tea ({shown['messages'][0]['text']})", [1])])
    kept = extracted(declared, "conv-cc-1")
    gone = extracted(declared, "conv-cc-2")
    # when one conversation is erased
    done = erased(declared, "conversation", "conv-cc-2")
    # then its jobs, decisions, watermark and the note of its thread are gone, words and all
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan(["says conv-cc-2"]) == []
    assert not ExtractionJob.objects.filter(pk=gone.pk).exists()
    assert not ExtractionDecision.objects.filter(job_id=gone.pk).exists()
    assert not ConversationExtraction.objects.filter(conversation__thread_id="conv-cc-2").exists()
    assert not Fact.objects.filter(thread_id="conv-cc-2").exists()
    # and the other conversation's extraction stands
    assert ExtractionJob.objects.filter(pk=kept.pk).exists()
    assert ExtractionDecision.objects.filter(job_id=kept.pk).count() == 1
    assert Fact.objects.filter(thread_id="conv-cc-1").count() == 1
