"""The expiry sweep and the purge: batched, idempotent, never past a hold, reported."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from facts import sweeps
from facts.models import Fact, Link, Revision, SweepKind, SweepReport
from tests import factories
from tests.facts.conftest import fact_insert

pytestmark = pytest.mark.django_db


def test_the_sweep_expires_current_revisions_past_expires_at_in_batches(world, other_world):
    # given five expired facts, one not yet expired, one expired under legal hold, and
    # an expired fact in another tenant
    past = timezone.now() - timedelta(minutes=1)
    expired = [fact_insert(world.tenant, expires_at=past) for _ in range(5)]
    fresh = fact_insert(world.tenant, expires_at=timezone.now() + timedelta(days=1))
    held = fact_insert(world.tenant, expires_at=past, legal_hold=True)
    elsewhere = fact_insert(other_world.tenant, expires_at=past)
    # when the sweep runs, two rows per batch
    counts = sweeps.expiry_sweep(limit=2)
    # then exactly the expired, unheld revisions are invalidated `expired`, per tenant
    assert counts == {world.tenant.id: 5, other_world.tenant.id: 1}
    for revision in [*expired, elsewhere]:
        revision.refresh_from_db()
        assert revision.invalidation_reason == "expired"
        assert revision.invalidated_by == sweeps.SWEEP_BY
    fresh.refresh_from_db()
    held.refresh_from_db()
    assert fresh.invalidated_at is None
    assert held.invalidated_at is None
    report = SweepReport.objects.get(tenant=world.tenant, kind=SweepKind.EXPIRY)
    assert (report.count, report.batches) == (5, 3)
    assert report.finished_at is not None
    # when it runs again, nothing is left to do
    assert sweeps.expiry_sweep(limit=2) == {}


def test_the_purge_deletes_ended_facts_after_the_delay_but_never_held_or_kept(world, settings):
    # given facts that ended (expired) long ago, one recently, one under legal hold,
    # one kept until next week, and a live fact with superseded history
    settings.FACTS_PURGE_DELAY_DAYS = 30
    now = timezone.now()
    long_ago = now - timedelta(days=31)

    def ended(**fields):  # type: ignore[no-untyped-def]
        revision = fact_insert(world.tenant, **fields)
        Revision.objects.filter(pk=revision.pk).update(
            invalidated_at=fields.pop("at", long_ago),
            invalidation_reason="deleted",
            invalidated_by="someone",
        )
        return revision

    gone = [ended() for _ in range(3)]
    recent = fact_insert(world.tenant)
    Revision.objects.filter(pk=recent.pk).update(
        invalidated_at=now - timedelta(days=2), invalidation_reason="deleted", invalidated_by="x"
    )
    held = ended(legal_hold=True)
    kept = fact_insert(world.tenant)
    Revision.objects.filter(pk=kept.pk).update(
        invalidated_at=long_ago,
        invalidation_reason="expired",
        invalidated_by="x",
        keep_until=now + timedelta(days=7),
    )
    live = fact_insert(world.tenant)
    Revision.objects.filter(pk=live.pk).update(
        invalidated_at=long_ago, invalidation_reason="superseded", invalidated_by="x"
    )
    factories.revision_create(live.fact, version=2, content="now")
    factories.link_create(gone[0].fact, live.fact, "t")
    # when the purge runs, two rows per batch
    counts = sweeps.purge(limit=2)
    # then only the ended, unheld, unkept revisions past the delay are gone, with their facts
    assert counts == {world.tenant.id: 3}
    assert not Fact.objects.filter(pk__in=[r.fact_id for r in gone]).exists()
    assert not Link.objects.exists()
    for revision in (recent, held, kept, live):
        assert Revision.objects.filter(pk=revision.pk).exists()
    report = SweepReport.objects.get(kind=SweepKind.PURGE)
    assert (report.count, report.batches) == (3, 2)
    # when it runs again, nothing more goes
    assert sweeps.purge(limit=2) == {}
