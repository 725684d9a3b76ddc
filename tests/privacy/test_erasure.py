"""Erasure, run in process: every step, the receipt, legal holds, resuming, the residue."""

from __future__ import annotations

import pytest

from api.errors import ErasureInProgress
from facts.models import Fact, Revision
from facts.services import fact_create
from kindmem.models import ErasureHold, Run
from privacy.erasure import erasure_run
from privacy.models import ErasureRequest, RequestStatus
from privacy.services import erasure_start
from recall.models import Conversation, Message
from runlog.models import LogEntry
from runlog.verify import verify_run
from tests import factories
from tests.privacy.conftest import plant_person, residue_scan

pytestmark = pytest.mark.django_db


def _start(world, kind: str, target: str) -> ErasureRequest:
    return erasure_start(
        tenant_id=world.tenant.id,
        target_kind=kind,
        target_id=target,
        reason="the person asked",
        requested_by="admin:test",
    )


def test_erasing_a_participant_leaves_no_residue_and_keeps_the_other_person(world):
    # given two people in the same project, each with facts, messages and log entries
    alice = plant_person(world, "participant-alice-q7", "zqalice", facts=3, messages=5, entries=3)
    bob = plant_person(world, "participant-bob-q7", "zqbob", facts=2, messages=2, entries=2)
    factories.access_request_create(world.tenant, "participant", alice.participant_id)
    # when alice is erased, three rows per batch
    request = _start(world, "participant", alice.participant_id)
    done = erasure_run(erasure_id=request.id, limit=3)
    # then nothing about alice is left anywhere, and bob is untouched
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([alice.participant_id, alice.marker]) == []
    assert Fact.objects.filter(pk__in=bob.fact_ids).count() == len(bob.fact_ids)
    assert Message.objects.filter(conversation_id__in=bob.conversation_ids).count() == 2
    assert LogEntry.objects.filter(run__in=bob.runs, payload__isnull=False).count() == 2
    assert residue_scan([bob.marker]) != []
    # and alice's runs still verify, their payloads gone
    for run in alice.runs:
        assert verify_run(Run.objects.get(pk=run.pk)).ok
    # and the receipt counts every kind and names no one
    receipt = done.receipt
    assert receipt["counts_by_kind"] == {
        "access-request": 1,
        "conversation": 1,
        "fact": 4,
        "link": 1,
        "message": 5,
        "revision": 7,
        "run": 1,
        "thread": 1,
    }
    assert receipt["held"] == []
    assert len(receipt["digest"]) == 64
    assert "participant-alice" not in str(receipt)
    assert not ErasureHold.objects.exists()
    assert done.total_estimate == sum(receipt["counts_by_kind"].values())


def test_messages_data_and_a_cleared_conversation_are_erased_too(world):
    from recall.services import ConversationStart, NewMessage, conversation_append, messages_delete

    # given an agent framework's session of alice's: items kept as data, and a second
    # conversation of hers that was cleared (empty, but naming her)
    person = "participant-alice-data"
    for thread in ("t-data-1", "t-data-2"):
        run = factories.run_create(
            world.app, world.project, participant_id=person, thread_id=thread
        )
        conversation_append(
            principal=run.principal,
            conversation_id=thread,
            messages=[NewMessage("tool", "function_call track", {"args": "zqdata-secret"})],
            start=ConversationStart(),
        )
    messages_delete(principal=run.principal, conversation_id="t-data-2")
    # when she is erased
    done = erasure_run(erasure_id=_start(world, "participant", person).id)
    # then neither conversation nor anything their data held is left
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([person, "zqdata-secret"]) == []
    assert not Conversation.objects.filter(participant_id=person).exists()


def test_a_revision_under_legal_hold_is_kept_and_listed_in_the_receipt(world):
    # given a person with a fact, one revision of which is under legal hold
    alice = plant_person(world, "participant-held", "zqheld", facts=1, messages=0, entries=0)
    kept = Revision.objects.filter(fact_id=alice.fact_ids[0], version=1).get()
    Revision.objects.filter(pk=kept.pk).update(legal_hold=True)
    # when the person is erased
    done = erasure_run(erasure_id=_start(world, "participant", alice.participant_id).id)
    # then the held revision (and its fact) remain, and the receipt says so and why
    assert list(Revision.objects.filter(fact_id=alice.fact_ids[0])) == [kept]
    assert done.receipt["held"] == [
        {
            "kind": "revision",
            "id": str(kept.id),
            "fact_id": alice.fact_ids[0],
            "version": 1,
            "hold": "legal",
        }
    ]
    assert not Fact.objects.filter(pk=alice.fact_ids[1]).exists()


def test_a_resumed_erasure_picks_up_after_the_last_batch_and_counts_each_row_once(world):
    # given an erasure that a worker left after its first batches
    alice = plant_person(world, "participant-resume", "zqresume", facts=4, messages=6)
    request = _start(world, "participant", alice.participant_id)
    expected = None
    # when it is run again and again (as a redelivered task would)
    first = erasure_run(erasure_id=request.id, limit=2)
    again = erasure_run(erasure_id=request.id, limit=2)
    # then the second run changes nothing and the receipt is the first's
    assert first.status == RequestStatus.COMPLETED
    assert again is None
    expected = ErasureRequest.objects.get(pk=request.id).receipt
    assert expected == first.receipt
    assert expected["counts_by_kind"]["revision"] == 9


def test_a_write_for_the_held_person_is_refused_and_another_person_is_not(world):
    # given an accepted erasure that no worker has run yet
    _start(world, "participant", "participant-frozen")
    scope = {"project_id": str(world.project.id)}
    # when facts are written for the held person and for another
    with pytest.raises(ErasureInProgress):
        fact_create(
            principal=world.app.principal,
            type="note",
            content="x",
            scope={**scope, "participant_id": "participant-frozen"},
        )
    other = fact_create(
        principal=world.app.principal,
        type="note",
        content="y",
        scope={**scope, "participant_id": "participant-free"},
    )
    # then only the other person's landed
    assert Fact.objects.filter(participant_id="participant-frozen").count() == 0
    assert other.revision.fact.participant_id == "participant-free"


def test_erasing_one_conversation_deletes_it_and_the_facts_written_in_it(world):
    # given a person's conversation, and a fact scoped to that thread
    alice = plant_person(world, "participant-conv", "zqconv", facts=0, messages=4)
    fact = fact_create(
        principal=world.app.principal,
        type="note",
        content="said in the thread",
        scope={"project_id": str(world.project.id), "thread_id": alice.thread_id},
    )
    # when the conversation is erased
    done = erasure_run(erasure_id=_start(world, "conversation", alice.thread_id).id)
    # then the conversation, its messages and the thread's fact are gone; the runs verify
    assert not Conversation.objects.filter(thread_id=alice.thread_id).exists()
    assert not Fact.objects.filter(pk=fact.revision.fact_id).exists()
    assert done.receipt["counts_by_kind"]["message"] == 4
    assert LogEntry.objects.filter(run__in=alice.runs, payload__isnull=False).count() == 0
    assert all(verify_run(run).ok for run in alice.runs)


def test_erasing_a_kindgi_user_takes_their_id_off_what_they_wrote(world):
    # given a fact about the user and a fact the user wrote about nobody
    user_id = str(world.user.id)
    about = fact_create(
        principal=world.admin.principal,
        type="note",
        content="about the user",
        scope={"user_id": user_id},
    )
    written = fact_create(
        principal=world.user_key.principal,
        type="note",
        content="by the user",
        scope={"project_id": str(world.project.id)},
    )
    # when the user is erased
    done = erasure_run(erasure_id=_start(world, "user", user_id).id)
    # then the fact about them is gone, the other one stays without their id
    assert not Fact.objects.filter(pk=about.revision.fact_id).exists()
    assert Revision.objects.get(pk=written.revision.pk).attributed_id == "erased"
    assert done.receipt["counts_by_kind"]["attribution"] == 1


def test_erasing_an_external_subject_removes_the_facts_that_name_them(world):
    # given a fact about an external subject id
    from facts.scopes import SubjectInput

    fact = fact_create(
        principal=world.admin.principal,
        type="note",
        content="about a supplier contact",
        scope={"project_id": str(world.project.id)},
        subjects=[SubjectInput(kind="external", id="crm-4711")],
    )
    # when the external subject is erased
    done = erasure_run(erasure_id=_start(world, "external", "crm-4711").id)
    # then the fact is gone and the scan finds nothing
    assert not Fact.objects.filter(pk=fact.revision.fact_id).exists()
    assert done.receipt["counts_by_kind"] == {"fact": 1, "revision": 1}
    assert residue_scan(["crm-4711"]) == []


def test_asking_again_while_the_person_is_being_erased_returns_the_same_request(world):
    # given an accepted erasure
    first = _start(world, "participant", "participant-twice")
    # when the same erasure is asked for again before it has finished
    again = _start(world, "participant", "participant-twice")
    # then it is the same request, with one hold
    assert again.pk == first.pk
    assert ErasureHold.objects.filter(subject_id="participant-twice").count() == 1


def test_the_beat_sweep_re_enqueues_only_erasures_whose_worker_went_quiet(
    world, settings, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from privacy import tasks

    # given an erasure whose worker last reported a minute ago, and one that reported now
    settings.ERASURE_STALE_SECONDS = 30
    stale = _start(world, "participant", "participant-stale")
    fresh = _start(world, "participant", "participant-fresh")
    ErasureRequest.objects.filter(pk=stale.pk).update(
        status=RequestStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(minutes=1)
    )
    ErasureRequest.objects.filter(pk=fresh.pk).update(
        status=RequestStatus.RUNNING, heartbeat_at=timezone.now()
    )
    sent: list[str] = []
    monkeypatch.setattr(
        tasks.erase_subject, "delay", lambda erasure_id, tenant_id: sent.append(erasure_id)
    )  # the broker, not the DB
    # when the beat runs the sweep
    swept = tasks.resume_erasures()
    # then the sweep re-enqueued only the stale erasure
    assert swept == 1
    assert sent == [str(stale.pk)]
