"""How long a revision is kept: the tenant's policy for a type, a write's override, the expiry
they give, what forbids deleting, and the cap-cull write policy."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet

from api.errors import Conflict
from audit.models import Outcome, Phase
from audit.services import AuditNote, audit_record
from compiled import compiled
from facts.announce import fact_changed
from facts.models import (
    Fact,
    InvalidationReason,
    RetentionPolicy,
    Revision,
    Subject,
    WritePolicyKind,
)
from facts.scopes import SCOPE_KEYS, SubjectInput
from kindmem.access import Principal


@compiled()
def retention_policy_of(tenant_id: uuid.UUID, fact_type: str) -> QuerySet[RetentionPolicy]:
    """The tenant's retention policy for the type (`Retention.of_policy`), a read a write may
    make ahead with others."""
    return RetentionPolicy.objects.filter(tenant_id=tenant_id, fact_type=fact_type).order_by("pk")[
        :1
    ]


@dataclass(frozen=True)
class RetentionInput:
    """The seed's Retention: a fact-level override of the tenant's policy for the type. A
    field left out (None) keeps what it overrides."""

    keep_days: int | None = None
    keep_until: datetime | None = None
    legal_hold: bool | None = None


@dataclass(frozen=True)
class Retention:
    """A revision's retention columns."""

    keep_days: int | None = None
    keep_until: datetime | None = None
    legal_hold: bool = False

    @classmethod
    def of_policy(cls, tenant_id: uuid.UUID, fact_type: str) -> Retention:
        """The tenant's policy for the type (none: kept until deleted)."""
        policy = retention_policy_of(tenant_id, fact_type).first()
        return cls(policy.keep_days, None, policy.legal_hold) if policy else cls()

    @classmethod
    def of_revision(cls, revision: Revision) -> Retention:
        return cls(revision.keep_days, revision.keep_until, revision.legal_hold)

    def overridden_by(self, override: RetentionInput | None) -> Retention:
        """Each field `override` names replaces this one's; a field left out is kept (a write
        that says `keep_days` does not lift a legal hold)."""
        if override is None:
            return self
        return Retention(
            self.keep_days if override.keep_days is None else override.keep_days,
            self.keep_until if override.keep_until is None else override.keep_until,
            self.legal_hold if override.legal_hold is None else override.legal_hold,
        )

    def expires_at(self, first_write: datetime) -> datetime | None:
        """When a revision stops being readable: never under a legal hold; else `keep_until`,
        or `keep_days` from the fact's first write; else never."""
        if self.legal_hold:
            return None
        if self.keep_until is not None:
            return self.keep_until
        if self.keep_days is not None:
            return first_write + timedelta(days=self.keep_days)
        return None


def weakened(before: Retention, after: Retention) -> list[str]:
    """The retention fields `after` weakens against `before`: a legal hold lifted, a keep-until
    moved earlier or dropped, fewer keep-days or none. Who may weaken them, and who may set
    them at all, is `facts.authority`'s table."""
    fields = []
    if before.legal_hold and not after.legal_hold:
        fields.append("legal_hold")
    if before.keep_until is not None and (
        after.keep_until is None or after.keep_until < before.keep_until
    ):
        fields.append("keep_until")
    if before.keep_days is not None and (
        after.keep_days is None or after.keep_days < before.keep_days
    ):
        fields.append("keep_days")
    return fields


def retention_forbids_delete(revision: Revision, fact: Fact, now: datetime) -> str | None:
    """The seed's RetentionViolation reason that forbids deleting this revision now, if any."""
    if revision.legal_hold:
        return "legal-hold"
    if revision.keep_until is not None and revision.keep_until > now:
        return "keep-until"
    if (
        revision.keep_days is not None
        and fact.created_at + timedelta(days=revision.keep_days) > now
    ):
        return "keep-days"
    return None


def invalidate(revision: Revision, *, by: str, reason: str, now: datetime) -> None:
    """End a current revision (`superseded` or `deleted`), under the fact's row lock."""
    changed = Revision.objects.filter(pk=revision.pk, invalidated_at__isnull=True).update(
        invalidated_at=now, invalidated_by=by, invalidation_reason=reason
    )
    if changed != 1:  # the lock makes this unreachable; if it is reached, write nothing
        raise Conflict("Another write replaced this revision first.")
    revision.invalidated_at, revision.invalidated_by = now, by
    revision.invalidation_reason = reason
    if reason == InvalidationReason.DELETED and revision.review is None:
        # a readable value deleted (a rejected one was never readable)
        fact_changed(
            fact=revision.fact,
            revision=revision,
            change="deleted",
            subjects=lambda: [SubjectInput(s.kind, s.subject_id) for s in revision.subjects.all()],
        )


# how an eviction is attributed: the invalidating writer, and the event's endpoint
CAP_CULL_BY = f"policy:{WritePolicyKind.CAP_CULL.value}"


def cap_cull(
    fact: Fact, max_records: int, *, principal: Principal, now: datetime
) -> list[Revision]:
    """Evict the oldest live facts of `fact`'s type and exact scope past `max_records`
    (invalidated `deleted` by "policy:cap-cull"), and record the eviction in the audit stream.
    A fact whose retention forbids deleting it is kept and still counts. Rows are locked in
    primary-key order so that concurrent writers do not deadlock."""
    same = {f"fact__{c}": getattr(fact, c) for c in SCOPE_KEYS}
    cohort = list(
        Revision.objects.of_tenant(fact.tenant_id)
        .live()
        .filter(fact__type=fact.type, **same)
        .select_related("fact")
        .order_by("pk")
        .select_for_update(of=("self",))
    )
    excess = len(cohort) - max_records
    if excess <= 0:
        return []
    evicted: list[Revision] = []
    for revision in sorted(cohort, key=lambda r: (r.fact.created_at, r.fact_id)):
        if len(evicted) == excess:
            break
        if revision.fact_id == fact.id or retention_forbids_delete(revision, revision.fact, now):
            continue
        invalidate(revision, by=CAP_CULL_BY, reason=InvalidationReason.DELETED, now=now)
        evicted.append(revision)
    if evicted:
        _cap_cull_audit(principal=principal, fact=fact, evicted=evicted, max_records=max_records)
    return evicted


def _cap_cull_audit(
    *, principal: Principal, fact: Fact, evicted: list[Revision], max_records: int
) -> None:
    """The eviction's own event, beside the write's (the 003 seed observes evictions too):
    phase delete by the writer, the evicted facts and whom they were about, their type and
    scope. In the write's transaction, so it exists exactly when the eviction committed."""
    note = AuditNote(
        phase=Phase.DELETE,
        kind="fact",
        project_id=fact.project_id,
        query_snapshot={"max_records": max_records, "written": str(fact.id)},
    )
    about = Subject.objects.filter(
        tenant_id=fact.tenant_id, revision_id__in=[r.pk for r in evicted]
    ).values_list("kind", "subject_id")
    note.touch(
        ids=[r.fact_id for r in evicted],
        subjects=list(about),
        targets=[(r.fact.type, r.fact.scope) for r in evicted],
    )
    audit_record(principal=principal, note=note, outcome=Outcome.SUCCESS, endpoint=CAP_CULL_BY)
