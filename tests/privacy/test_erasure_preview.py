"""The erasure preview (what an erasure would do, written nowhere) and the receipt's target
reference (recognising an erased id without keeping it)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from facts.models import Revision
from facts.services import fact_create
from kindmem.models import SubjectKind
from kindmem.subjects import Subject
from privacy.erasure import erasure_preview, erasure_run
from privacy.models import ErasureRequest
from privacy.receipts import subject_reference
from privacy.services import erasure_start
from tests.privacy.conftest import plant_person

pytestmark = pytest.mark.django_db


def _participant(pid: str) -> Subject:
    return Subject.parse(SubjectKind.PARTICIPANT, pid)


def _start(world, kind: str, target: str) -> ErasureRequest:
    return erasure_start(
        tenant_id=world.tenant.id,
        target_kind=kind,
        target_id=target,
        reason="the person asked",
        requested_by="admin:test",
    )


def test_the_preview_counts_what_the_erasure_then_erases_and_writes_nothing(world):
    # given a person with facts, links, a conversation, runs and a thread
    alice = plant_person(world, "participant-pv", "zqpv", facts=3, messages=5, entries=3)
    # when their erasure is previewed
    with CaptureQueriesContext(connection) as queries:
        preview = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-pv"))
    # then it wrote nothing, in a bounded number of statements
    assert all(q["sql"].lstrip().upper().startswith("SELECT") for q in queries.captured_queries)
    assert len(queries.captured_queries) <= 15
    assert not ErasureRequest.objects.exists()
    # and its counts are the receipt's, kind for kind
    assert not preview.nothing_matches
    done = erasure_run(erasure_id=_start(world, "participant", alice.participant_id).id)
    assert {k: v for k, v in preview.counts.items() if v} == done.receipt["counts_by_kind"]
    assert preview.total == done.total_estimate


def test_a_revision_under_legal_hold_is_shown_as_kept_with_its_fact(world):
    # given a person with two facts, the first revision of one under legal hold
    alice = plant_person(world, "participant-pvh", "zqpvh", facts=2, messages=0, entries=0)
    kept = Revision.objects.get(fact_id=alice.fact_ids[0], version=1)
    Revision.objects.filter(pk=kept.pk).update(legal_hold=True)
    # when the erasure is previewed
    preview = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-pvh"))
    # then the held revision is listed, and its fact is not counted as erased
    assert preview.held_count == 1
    assert preview.held == [
        {
            "kind": "revision",
            "id": str(kept.id),
            "fact_id": alice.fact_ids[0],
            "version": 1,
            "hold": "legal",
        }
    ]
    done = erasure_run(erasure_id=_start(world, "participant", alice.participant_id).id)
    assert preview.counts["fact"] == done.receipt["counts_by_kind"]["fact"] == 2
    assert preview.counts["revision"] == done.receipt["counts_by_kind"]["revision"]


def test_an_id_nothing_is_about_is_said_to_match_nothing(world, other_world):
    # given a person in another tenant with the very id asked for
    plant_person(other_world, "participant-typo", "zqtypo", facts=1, messages=1, entries=1)
    # when that id is previewed in this tenant, and a near miss of a real person's
    plant_person(world, "participant-real", "zqreal", facts=1, messages=1, entries=1)
    elsewhere = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-typo"))
    typo = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-rea1"))
    # then both match nothing, every count zero
    assert elsewhere.nothing_matches
    assert typo.nothing_matches
    assert set(typo.counts.values()) == {0}
    assert typo.held == []
    assert typo.unfinished is None
    assert typo.erased_before == []


def test_a_kindgi_users_preview_counts_what_they_wrote_as_attributions(world):
    # given a fact the user wrote about nobody
    fact_create(
        principal=world.user_key.principal,
        type="note",
        content="by the user",
        scope={"project_id": str(world.project.id)},
    )
    # when the user's erasure is previewed, then run
    subject = Subject.user(world.user.id)
    preview = erasure_preview(tenant_id=world.tenant.id, subject=subject)
    done = erasure_run(erasure_id=_start(world, "user", str(world.user.id)).id)
    # then the attribution is counted, as the receipt counts it
    assert preview.counts["attribution"] == done.receipt["counts_by_kind"]["attribution"] == 1
    assert not preview.nothing_matches


def test_a_completed_erasure_is_found_again_by_its_id_though_it_forgot_it(world, other_world):
    # given a completed erasure (its target id cleared)
    plant_person(world, "participant-done", "zqdone", facts=1, messages=0, entries=0)
    done = erasure_run(erasure_id=_start(world, "participant", "participant-done").id)
    assert done.target_id == ""
    # when the same id is previewed again, in this tenant and in another
    again = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-done"))
    there = erasure_preview(
        tenant_id=other_world.tenant.id, subject=_participant("participant-done")
    )
    near = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-don"))
    # then only this tenant's exact id finds it, through the receipt's reference
    assert [e.pk for e in again.erased_before] == [done.pk]
    assert there.erased_before == []
    assert near.erased_before == []
    assert done.receipt["target_reference"] == done.target_reference
    assert len(done.target_reference) == 64
    assert "participant-done" not in str(done.receipt)


def test_an_erasure_stays_recognisable_after_the_secret_key_rotates(world, settings):
    # given a completed erasure referenced under the old key
    done = erasure_run(erasure_id=_start(world, "participant", "participant-rot").id)
    old = settings.SECRET_KEY
    # when the key rotates, the old one kept as a fallback
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40
    settings.SECRET_KEY_FALLBACKS = [old]
    subject = _participant("participant-rot")
    # then the erasure is still found, though a new reference would differ
    assert ErasureRequest.objects.of_subject(world.tenant.id, subject).get() == done
    assert subject_reference(tenant_id=world.tenant.id, subject=subject) != done.target_reference
    # and without the fallback it is not
    settings.SECRET_KEY_FALLBACKS = []
    assert not ErasureRequest.objects.of_subject(world.tenant.id, subject).exists()


def test_the_preview_names_the_erasure_already_under_way(world):
    # given an accepted erasure not yet run
    first = _start(world, "participant", "participant-busy")
    # when it is previewed again
    preview = erasure_preview(tenant_id=world.tenant.id, subject=_participant("participant-busy"))
    # then the preview names it (starting again would answer it)
    assert preview.unfinished == first
