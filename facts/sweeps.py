"""Retention on a schedule: the expiry sweep and the purge (Celery beat runs both).

- The **expiry sweep** invalidates current revisions past `expires_at` with reason `expired`
  (reads already hide them by comparing `expires_at` in the query; the sweep makes it part of
  the record). A revision under legal hold is never expired.
- The **purge** deletes the revisions of *ended* facts (no current revision: deleted or
  expired) once they have been invalidated for FACTS_PURGE_DELAY_DAYS, never one under legal
  hold or before its `keep_until`; a fact left with no revision goes too, with its links.
  Superseded revisions of a live fact are its history and are kept.

Both work in batches of `limit` rows, one transaction per batch, rows claimed with
`FOR UPDATE SKIP LOCKED` so two runs never fight over a row; what is left is found again by
the same query, so an interrupted run is simply carried on by the next (idempotent). Each run
writes one `SweepReport` per tenant with work, counted in the batches' transactions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from facts.models import (
    Fact,
    InvalidationReason,
    Link,
    Revision,
    Subject,
    SweepKind,
    SweepReport,
)

SWEEP_BY = "expiry-sweep"
DEFAULT_LIMIT = 500


def _expired(now: datetime) -> QuerySet[Revision]:
    return Revision.objects.filter(
        invalidated_at__isnull=True, expires_at__isnull=False, expires_at__lte=now, legal_hold=False
    )


def _purgeable(now: datetime) -> QuerySet[Revision]:
    cutoff = now - timedelta(days=settings.FACTS_PURGE_DELAY_DAYS)
    live = Revision.objects.filter(
        tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("fact_id"), invalidated_at__isnull=True
    )
    return Revision.objects.filter(
        Q(keep_until__isnull=True) | Q(keep_until__lte=now),
        invalidated_at__isnull=False,
        invalidated_at__lte=cutoff,
        legal_hold=False,
    ).exclude(Exists(live))


def _expire_batch(tenant_id: uuid.UUID, now: datetime, limit: int) -> int:
    ids = list(
        _expired(now)
        .filter(tenant_id=tenant_id)
        .order_by("id")
        .select_for_update(skip_locked=True)
        .values_list("id", flat=True)[:limit]
    )
    # Conditional: a revision superseded meanwhile is not current any more and is left alone.
    return Revision.objects.filter(pk__in=ids, invalidated_at__isnull=True).update(
        invalidated_at=now, invalidated_by=SWEEP_BY, invalidation_reason=InvalidationReason.EXPIRED
    )


def _purge_batch(tenant_id: uuid.UUID, now: datetime, limit: int) -> int:
    rows = list(
        _purgeable(now)
        .filter(tenant_id=tenant_id)
        .order_by("id")
        .select_for_update(skip_locked=True)
        .values_list("id", "fact_id")[:limit]
    )
    if not rows:
        return 0
    ids = [r[0] for r in rows]
    fact_ids = {r[1] for r in rows}
    Subject.objects.filter(revision_id__in=ids).delete()
    Revision.objects.filter(supersedes_id__in=ids).update(supersedes=None)
    Revision.objects.filter(pk__in=ids).delete()
    ended = list(
        Fact.objects.filter(pk__in=fact_ids)
        .exclude(
            Exists(Revision.objects.filter(tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("pk")))
        )
        .values_list("id", flat=True)
    )
    Link.objects.filter(Q(source_id__in=ended) | Q(target_id__in=ended)).delete()
    Fact.objects.filter(pk__in=ended).delete()
    return len(ids)


def _run(
    kind: str,
    candidates: Callable[[datetime], QuerySet[Revision]],
    batch: Callable[[uuid.UUID, datetime, int], int],
    now: datetime | None,
    limit: int,
) -> dict[uuid.UUID, int]:
    now = now or timezone.now()
    tenants = list(
        candidates(now).order_by("tenant_id").values_list("tenant_id", flat=True).distinct()
    )
    counts: dict[uuid.UUID, int] = {}
    for tenant_id in tenants:
        report = SweepReport.objects.create(tenant_id=tenant_id, kind=kind, started_at=now)
        while True:
            with transaction.atomic():
                done = batch(tenant_id, now, limit)
                if done:
                    report.count += done
                    report.batches += 1
                    report.save(update_fields=["count", "batches"])
            if done < limit:
                break
        report.finished_at = timezone.now()
        report.save(update_fields=["finished_at"])
        counts[tenant_id] = report.count
    return counts


def expiry_sweep(
    *, now: datetime | None = None, limit: int = DEFAULT_LIMIT
) -> dict[uuid.UUID, int]:
    """Invalidate (`expired`) the current revisions past `expires_at`; counts per tenant."""
    return _run(SweepKind.EXPIRY, _expired, _expire_batch, now, limit)


def purge(*, now: datetime | None = None, limit: int = DEFAULT_LIMIT) -> dict[uuid.UUID, int]:
    """Delete the ended facts' revisions whose purge delay has passed; counts per tenant."""
    return _run(SweepKind.PURGE, _purgeable, _purge_batch, now, limit)
