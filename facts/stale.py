"""Approving a value that waited for review is a compare-and-swap: whether the fact is still
what the value was computed from.

A run's value that must wait (a remembered slot value, a merge patch, a supersede, a proposal)
records the version of the fact's approved value it was computed from (`Revision.base_version`;
None when the fact had none). Meanwhile the fact may move on: an app edits or patches it, a
person verifies it, another waiting value is approved, someone deletes it, an erasure removes
its revisions. Approving the old value then would undo that write (revert the edit, bring back
a deleted field or a deleted fact), so `revision_approve` refuses it (`stale-approval`, 409) and
changes nothing. Rejecting it stays allowed: it changes nothing anyone reads.

What "moved on" means, read under the fact's row lock (every writer of a fact takes it):

- an approved value written after the waiting one: a revision with `review IS NULL` and a
  higher version (every write numbers its revision above every existing one, `next_version`,
  and approving a waiting value renumbers it above any newer one); an edit, patch, verify,
  slot write or another approval each write one;
- or the value it was computed from is no longer current: deleted (`deleted`), or gone
  (erased, purged). One that merely expired is not a write: its successor still replaces
  nothing that anyone wrote;
- or, for a value computed from no approved value (a new fact), an approved one appeared.

The console reads the same annotations for a page of the queue at once (`stale_among`), so
what it shows and what approving does never disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from api.errors import StaleApproval
from facts.models import InvalidationReason, Revision, RevisionQuerySet


class Change:
    """How the fact moved on since a waiting value was computed from it."""

    CHANGED = "changed"  # a newer approved value: an edit, patch, verify, another approval
    DELETED = "deleted"  # the value it was computed from was deleted, with no successor
    ERASED = "erased"  # the value it was computed from is gone (an erasure removed it)


@dataclass(frozen=True)
class Staleness:
    """Why a waiting value may no longer be approved."""

    base_version: int | None
    current_version: int | None  # the fact's approved value now; None: none
    change: str

    @property
    def message(self) -> str:
        since = (
            f"version {self.base_version}"
            if self.base_version is not None
            else "a fact with no approved value"
        )
        if self.change == Change.CHANGED:
            return (
                f"The fact changed since this memory was written (from {since}; now version"
                f" {self.current_version}): approving it would undo that change. Reject it; the"
                " agent may write it again from the current value."
            )
        if self.change == Change.DELETED:
            return (
                f"The fact was deleted since this memory was written (from {since}): approving"
                " it would bring it back. Reject it."
            )
        return (
            f"The fact was erased since this memory was written (from {since}): nothing of it"
            " comes back. Reject it."
        )

    def details(self) -> dict[str, Any]:
        return {
            "base_version": self.base_version,
            "current_version": self.current_version,
            "change": self.change,
        }

    def error(self) -> StaleApproval:
        return StaleApproval(self.message, details=self.details())


_CURRENT = "current"  # `base_state` of a base value still current


def _annotated(revisions: RevisionQuerySet, tenant_id: uuid.UUID) -> RevisionQuerySet:
    """Each waiting revision with what its approval compares: the newest approved version
    above its own (`newer_version`), the fact's approved value now (`current_version`) and the
    state of the value it was computed from (`base_state`: its invalidation reason, "current",
    or NULL when no row has that version). The subqueries name the tenant as a value (Citus
    routes one in the select list to the tenant's shard only then)."""
    same_fact = Revision.objects.filter(
        tenant_id=tenant_id, fact_id=OuterRef("fact_id"), review__isnull=True
    ).order_by("-version")
    return revisions.annotate(
        newer_version=Subquery(
            same_fact.filter(version__gt=OuterRef("version")).values("version")[:1]
        ),
        current_version=Subquery(
            same_fact.filter(invalidated_at__isnull=True).values("version")[:1]
        ),
        base_state=Subquery(
            same_fact.filter(version=OuterRef("base_version")).values(
                state=Coalesce("invalidation_reason", Value(_CURRENT))
            )[:1]
        ),
    )


def _judge(revision: Revision) -> Staleness | None:
    base: int | None = revision.base_version
    newer: int | None = revision.newer_version  # type: ignore[attr-defined]
    current: int | None = revision.current_version  # type: ignore[attr-defined]
    state: str | None = revision.base_state  # type: ignore[attr-defined]
    if newer is not None or (base is None and current is not None):
        return Staleness(base, current, Change.CHANGED)
    if base is None or state in (_CURRENT, InvalidationReason.EXPIRED):
        return None
    if state is None:
        return Staleness(base, current, Change.ERASED)
    if state == InvalidationReason.DELETED:
        return Staleness(base, current, Change.DELETED)
    # superseded, yet no newer value: unreachable (a successor numbers above every version), and
    # moved on all the same
    return Staleness(base, current, Change.CHANGED)


def check_not_stale(revision: Revision) -> None:
    """Refuse approving `revision` (`stale-approval`) when its fact moved on since it was
    computed. Call under the fact's row lock, in the approval's transaction: no writer of the
    fact can come between this read and the approval's write."""
    in_tenant = Revision.objects.filter(tenant_id=revision.tenant_id, pk=revision.pk)
    annotated = _annotated(in_tenant, revision.tenant_id).only("id", "base_version", "version")
    staleness = _judge(annotated.get())
    if staleness is not None:
        raise staleness.error()


def stale_among(
    tenant_id: uuid.UUID, revision_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, Staleness]:
    """The revisions of `revision_ids` (of `tenant_id`) whose approval would be refused now, and
    why: one query for a page of the review queue."""
    ids = list(revision_ids)
    if not ids:
        return {}
    in_tenant = Revision.objects.filter(tenant_id=tenant_id, pk__in=ids)
    rows = _annotated(in_tenant, tenant_id).only("id", "base_version", "version")
    return {r.pk: s for r in rows if (s := _judge(r)) is not None}
