"""The write services: supersede under concurrency, verify, retention, holds, dedup."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from api.errors import Conflict, ErasureInProgress, Forbidden
from facts import services
from facts.models import Fact, Revision
from facts.retention import RetentionInput
from facts.scopes import SubjectInput
from tests import factories


def run_together(*calls: Any) -> list[Any]:
    """Run the calls in threads that start at once; each result or exception, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def worker(i: int, call: Any) -> None:
        try:
            barrier.wait()
            results[i] = call()
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_supersedes_of_one_version_one_wins_the_other_conflicts(world) -> None:
    # given: a fact at version 1
    fact = services.fact_create(principal=world.admin.principal, type="note", content="v1")
    fid = fact.revision.fact_id

    def supersede(text: str) -> Any:
        return lambda: services.fact_supersede(
            principal=world.admin.principal, fact_id=fid, content=text, expected_version=1
        )

    # when: two writers supersede version 1 at the same moment
    results = run_together(supersede("left"), supersede("right"))

    # then: exactly one wins; the other gets a conflict; one current revision, nothing half-written
    wins = [r for r in results if isinstance(r, services.WriteResult)]
    conflicts = [r for r in results if isinstance(r, Conflict)]
    assert (len(wins), len(conflicts)) == (1, 1), results
    assert Revision.objects.filter(fact_id=fid).count() == 2
    current = Revision.objects.get(fact_id=fid, invalidated_at__isnull=True)
    assert current.version == 2
    assert current.content == wins[0].revision.content


@pytest.mark.django_db(transaction=True)
def test_concurrent_supersedes_queue_on_the_fact_and_never_leave_two_current(world) -> None:
    fact = services.fact_create(principal=world.admin.principal, type="note", content="v1")
    fid = fact.revision.fact_id
    results = run_together(
        *(
            (
                lambda t=t: services.fact_supersede(
                    principal=world.admin.principal, fact_id=fid, content=t
                )
            )
            for t in ("a", "b", "c")
        )
    )
    assert all(isinstance(r, services.WriteResult) for r in results), results
    versions = sorted(Revision.objects.filter(fact_id=fid).values_list("version", flat=True))
    assert versions == [1, 2, 3, 4]
    assert Revision.objects.filter(fact_id=fid, invalidated_at__isnull=True).count() == 1


@pytest.mark.django_db
def test_superseding_with_the_same_content_changes_nothing(world) -> None:
    first = services.fact_create(principal=world.admin.principal, type="note", content="same")
    again = services.fact_supersede(
        principal=world.admin.principal, fact_id=first.revision.fact_id, content="same"
    )
    assert again.outcome == "unchanged"
    assert Revision.objects.count() == 1


@pytest.mark.django_db
def test_hole_9_verify_keeps_the_keep_days_expiry_of_the_facts_retention(world) -> None:
    # given: a fact whose retention keeps it 30 days from its first write
    created = services.fact_create(
        principal=world.admin.principal,
        type="note",
        content="x",
        retention=RetentionInput(keep_days=30),
    )
    first_write = created.revision.fact.created_at
    assert created.revision.expires_at == first_write + timedelta(days=30)

    # when: a Kindgi user verifies it
    verified = services.fact_verify(
        principal=world.user_key.principal, fact_id=created.revision.fact_id
    )

    # then: the new revision is verified, and retention still ends it 30 days after the first
    # write: verifying lifts only an agent's unverified window, never the tenant's retention
    assert verified.revision.trust == "verified"
    assert verified.revision.supersedes_id == created.revision.id
    assert (verified.revision.keep_days, verified.revision.expires_at) == (
        30,
        first_write + timedelta(days=30),
    )


@pytest.mark.django_db
def test_hole_9_verify_keeps_the_keep_days_expiry_of_the_tenant_policy(world) -> None:
    # given: a tenant keeping notes 7 days, and a note written under that policy
    factories.retention_policy_create(world.tenant, keep_days=7)
    created = services.fact_create(principal=world.admin.principal, type="note", content="x")
    first_write = created.revision.fact.created_at

    # when: a Kindgi user verifies it
    verified = services.fact_verify(
        principal=world.user_key.principal, fact_id=created.revision.fact_id
    )

    # then: the policy's expiry stands
    assert verified.revision.expires_at == first_write + timedelta(days=7)


@pytest.mark.django_db
def test_verify_keeps_a_keep_until_and_a_fact_without_retention_never_expires(world) -> None:
    until = timezone.now() + timedelta(days=3)
    kept = services.fact_create(
        principal=world.admin.principal,
        type="note",
        content="kept",
        retention=RetentionInput(keep_until=until),
    )
    plain = services.fact_create(principal=world.admin.principal, type="note", content="plain")
    verified = [
        services.fact_verify(principal=world.user_key.principal, fact_id=r.revision.fact_id)
        for r in (kept, plain)
    ]
    assert [v.revision.expires_at for v in verified] == [until, None]


@pytest.mark.django_db
def test_an_app_may_not_verify(world) -> None:
    created = services.fact_create(principal=world.admin.principal, type="note", content="x")
    with pytest.raises(Forbidden):
        services.fact_verify(principal=world.app.principal, fact_id=created.revision.fact_id)


@pytest.mark.django_db
def test_the_tenant_policy_sets_retention_and_the_fact_override_wins(world) -> None:
    factories.retention_policy_create(world.tenant, keep_days=7)
    by_policy = services.fact_create(principal=world.admin.principal, type="note", content="a")
    overridden = services.fact_create(
        principal=world.admin.principal,
        type="note",
        content="b",
        retention=RetentionInput(keep_days=1),
    )
    assert by_policy.revision.keep_days == 7
    assert overridden.revision.keep_days == 1
    assert overridden.revision.expires_at == overridden.revision.fact.created_at + timedelta(days=1)


@pytest.mark.django_db
def test_delete_is_allowed_once_keep_days_have_elapsed(world) -> None:
    created = services.fact_create(
        principal=world.admin.principal,
        type="note",
        content="x",
        retention=RetentionInput(keep_days=1, legal_hold=False),
    )
    Fact.objects.filter(pk=created.revision.fact_id).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    Revision.objects.filter(pk=created.revision.pk).update(expires_at=None)
    deleted = services.fact_delete(
        principal=world.admin.principal, fact_id=created.revision.fact_id
    )
    assert deleted.invalidation_reason == "deleted"


@pytest.mark.django_db
def test_superseding_with_a_held_subject_is_refused_and_writes_nothing(world) -> None:
    created = services.fact_create(principal=world.admin.principal, type="note", content="x")
    factories.hold_create(world.tenant, "external", "crm-1")
    with pytest.raises(ErasureInProgress):
        services.fact_supersede(
            principal=world.admin.principal,
            fact_id=created.revision.fact_id,
            content="y",
            subjects=[SubjectInput(kind="external", id="crm-1")],
        )
    assert Revision.objects.get().invalidated_at is None


@pytest.mark.django_db
def test_a_user_key_writes_as_the_user(world) -> None:
    created = services.fact_create(
        principal=world.user_key.principal,
        type="profile",
        content="x",
        scope={"user_id": str(world.user.id)},
    )
    rev = created.revision
    assert (rev.attributed_kind, rev.attributed_id) == ("user", str(world.user.id))
    assert [(s.kind, s.subject_id) for s in rev.subjects.all()] == [("user", str(world.user.id))]


@pytest.mark.django_db
def test_a_bounded_ring_evicts_the_oldest_past_its_cap(world) -> None:
    # given: notes of this tenant are a ring of two per scope
    factories.write_policy_create(world.tenant, "turn", max_records=2)
    admin = world.admin.principal

    # when: three turns are written into one scope, and one elsewhere
    written = [services.fact_create(principal=admin, type="turn", content=t) for t in "abc"]
    services.fact_create(
        principal=admin, type="turn", content="d", scope={"project_id": str(world.project.id)}
    )

    # then: the oldest of that scope is evicted (deleted by the policy); the other scope is not
    first = Revision.objects.get(pk=written[0].revision.pk)
    assert (first.invalidation_reason, first.invalidated_by) == ("deleted", "policy:cap-cull")
    live = Revision.objects.live().order_by("content").values_list("content", flat=True)
    assert list(live) == ["b", "c", "d"]


@pytest.mark.django_db
def test_a_bounded_ring_keeps_equal_contents_as_separate_records(world) -> None:
    factories.write_policy_create(world.tenant, "turn", max_records=5)
    for _ in range(2):
        services.fact_create(principal=world.admin.principal, type="turn", content="hi")
    assert Revision.objects.live().count() == 2


@pytest.mark.django_db
def test_revisions_record_that_no_embedder_was_configured(world, settings) -> None:
    settings.EMBEDDER = "none"
    created = services.fact_create(principal=world.admin.principal, type="note", content="x")
    assert created.revision.embedding_state == "none"
    settings.EMBEDDER = "hashing"
    other = services.fact_create(principal=world.admin.principal, type="note", content="y")
    assert other.revision.embedding_state == "done"  # embedded in the write (facts/search)
