"""What a person decides about a fact's value: a run's proposed next value waiting for one
(`fact_propose`), a reviewer's approve and reject of a waiting revision, and verify."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from api.content_schema import check_content
from api.errors import (
    Conflict,
    Forbidden,
)
from api.transactions import service_atomic
from facts.announce import fact_changed
from facts.authority import (
    Change,
    Governed,
    authorize,
    check_may,
    may,
    overwrite_reasons,
    subject_set,
)
from facts.models import (
    Fact,
    InvalidationReason,
    Review,
    Revision,
    Trust,
)
from facts.provenance import attribution_of, content_hash
from facts.retention import (
    Retention,
    invalidate,
)
from facts.review import ReviewNeeded, agent_write_review
from facts.revisions import (
    Draft,
    Verification,
    check_expected,
    embed_for_write,
    embedded_copy,
    lock_current,
    next_version,
    subjects_of,
    write_revision,
)
from facts.scopes import (
    persons_of_write,
)
from facts.stale import check_not_stale
from facts.write_policy import write_policy_query
from facts.writes import Outcome, WriteResult, queued_for_review
from kindmem.access import Principal, PrincipalKind, Readers
from kindmem.holds import assert_not_held, frozen


@service_atomic
def fact_propose(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    content: Any,
    reasons: Sequence[str],
    window_days: int | None = None,
    source: Any = None,
    step_id: str | None = None,
    tool_call_id: str | None = None,
) -> WriteResult:
    """An agent run's proposed next value of a fact, for a person to decide: written `review:
    pending` beside the current revision, which stays current and readable, with its approval
    opened for `reasons` and whatever the review detectors find (`facts.review`). Approving it
    supersedes the current value (`revision_approve`); rejecting it leaves the fact as it was.

    Unlike `fact_supersede`, it may name a verified fact or another agent's: nothing changes
    until a reviewer approves (a run still never alters one on its own). The fact must be one
    the run may read (`fact-not-found` otherwise); refused, writing nothing, for a held person
    or a content that does not fit the type's schema. The same content as the current one is
    `unchanged`. An unverified window (`window_days`, the agent's declaration) bounds its
    expiry as `remember`'s does."""
    if principal.kind != PrincipalKind.RUN or principal.run is None:
        raise Forbidden("Only an agent run proposes a fact's next value.")
    embedded = embed_for_write(content)
    fact, current = lock_current(principal, fact_id)
    policy = write_policy_query(principal.tenant_id, fact.type).first()
    check_content([policy.content_schema if policy else None], content, type=fact.type)
    subjects = subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, subjects))
    if content_hash(content, None, None) == current.content_hash:
        return WriteResult(current, Outcome.UNCHANGED)
    retention = Retention.of_revision(current)
    # a proposal changes the content only: the type's mutable fields bound it as any write
    authorize(
        principal,
        before=Governed(retention, subject_set(subjects), current.content),
        after=Governed(retention, subject_set(subjects), content),
        mutable_fields=policy.mutable_fields if policy else (),
    )
    detected = agent_write_review().needed(principal, fact, content)
    given = [*reasons, *overwrite_reasons(principal, current)]
    why = [*dict.fromkeys(given), *(r for r in detected.reasons if r not in given)]
    if not why:
        raise ValueError("a proposal waits for a reviewer: name at least one reason")
    who = attribution_of(principal)
    now = timezone.now()
    expires_at = retention.expires_at(fact.created_at)
    if window_days is not None and not retention.legal_hold:
        window = now + timedelta(days=window_days)
        expires_at = min(window, expires_at) if expires_at else window
    revision = write_revision(
        fact=fact,
        version=next_version(fact),
        draft=Draft(
            content=content,
            observed_at=now,
            source=source,
            step_id=step_id,
            tool_call_id=tool_call_id,
        ),
        who=who,
        subjects=subjects,
        retention=retention,
        expires_at=expires_at,
        supersedes=None,  # linked by `revision_approve`, if a reviewer approves it
        trust=Trust.UNVERIFIED,
        review=Review.PENDING,
        base_version=current.version,  # approving it is a compare-and-swap (`facts.stale`)
        embedded=embedded,
        now=now,
    ).revision
    needed = ReviewNeeded(why, detected.findings)
    return queued_for_review(principal, WriteResult(revision, Outcome.SUPERSEDED), needed)


def can_verify(principal: Principal) -> bool:
    """A person with the right (`facts.authority`'s trust row): a tenant admin, a Kindgi user
    or staff in the console; never an app or an agent run."""
    return may(principal, ("trust", Change.SET))


@service_atomic
def fact_verify(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    expected_version: int | None = None,
    readers: Readers | None = None,
) -> WriteResult:
    """Write the next revision with `trust: verified`, `verified_by` and `verified_at`: same
    content, validity and subjects. It lifts an agent's unverified window, and only that: the
    verified revision expires when its retention says (`keep_until`, or `keep_days` from the
    fact's first write; never under a legal hold), as any fact written with that retention
    would. Verifying a verified fact changes nothing.

    `readers` widens what the verifier may reach: a reviewer deciding the tenant's review queue
    (approvals) verifies facts of people whose facts their own key could not list."""
    check_may(principal, ("trust", Change.SET))
    fact, current = lock_current(principal, fact_id, readers)
    check_expected(current, expected_version)
    subjects = subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, subjects))
    if current.trust == Trust.VERIFIED:
        return WriteResult(current, Outcome.UNCHANGED)
    retention = Retention.of_revision(current)
    held = subject_set(subjects)
    authorize(
        principal,
        before=Governed(retention, held, trust=current.trust),
        after=Governed(retention, held, trust=Trust.VERIFIED),
    )
    who = attribution_of(principal)
    now = timezone.now()
    invalidate(current, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
    written = write_revision(
        fact=fact,
        version=next_version(fact),
        draft=Draft(
            content=current.content,
            valid_from=current.valid_from,
            valid_until=current.valid_until,
            observed_at=current.observed_at,
            source=current.source,
            caused_by_log_id=current.caused_by_log_id,
        ),
        who=who,
        subjects=subjects,
        retention=retention,
        # the retention's expiry: the window `remember` set is not carried over
        expires_at=retention.expires_at(fact.created_at),
        supersedes=current,
        trust=Trust.VERIFIED,
        verified=Verification(by=who.label, at=now),
        approved_at=current.approved_at,  # the same content: approved if it was
        embedded=embedded_copy(current),
        now=now,
        read_back=True,
    )
    return WriteResult(written.revision, Outcome.VERIFIED, stored=written.stored)


def fact_lock(*, tenant_id: uuid.UUID, fact_id: uuid.UUID) -> None:
    """Take the fact's row lock, as every writer of it does, before a decision claims its
    approval: a decision then takes its locks in the writers' order (fact, then approval) and
    never deadlocks with a `remember` that closes the approvals of the slot it writes."""
    Fact.objects.select_for_update().filter(tenant_id=tenant_id, pk=fact_id).values_list(
        "pk", flat=True
    ).first()


@transaction.atomic
def revision_approve(*, tenant_id: uuid.UUID, revision_id: uuid.UUID, by: str) -> Revision:
    """A reviewer approved a pending revision: it becomes the fact's current revision as it is
    (still `unverified`), and the approved value it waited beside is invalidated `superseded`
    (by the reviewer), in this one transaction. Its record time (`created_at`) becomes now:
    until now no read, as-of reads included, could see it. It takes the next version when
    another writer numbered one meanwhile (a value waiting beside it, never approved).

    A compare-and-swap (`facts.stale`): when the fact moved on since the revision was computed
    (edited, patched, verified, another value approved, deleted, erased), it is refused
    (`stale-approval`) and nothing changes; checked under the fact's row lock, which every
    writer of the fact takes, so no write comes between the check and the swap. A revision that
    is no longer pending and current is a `conflict`; one about a person whose erasure runs is
    `erasure-in-progress` (nothing lands for them meanwhile)."""
    fact_id = (
        Revision.objects.filter(tenant_id=tenant_id, pk=revision_id)
        .values_list("fact_id", flat=True)
        .first()
    )
    # The fact's row lock first, as every writer of a fact takes it (no deadlock, and the
    # approved value read below is the one no concurrent supersede is replacing).
    # a frozen fact (kept under legal hold after an erasure) is written by nobody, a reviewer
    # included: its waiting value is no longer waiting
    fact = (
        Fact.objects.select_for_update()
        .filter(tenant_id=tenant_id, pk=fact_id)
        .exclude(frozen())
        .first()
        if fact_id is not None
        else None
    )
    waiting = (
        Revision.objects.filter(
            tenant_id=tenant_id, pk=revision_id, review=Review.PENDING, invalidated_at__isnull=True
        ).first()
        if fact is not None
        else None
    )
    if fact is None or waiting is None:
        raise Conflict("This memory is no longer waiting for review (replaced or erased).")
    assert_not_held(tenant_id, persons_of_write(fact, subjects_of(waiting)))
    check_not_stale(waiting)
    now = timezone.now()
    approved = Revision.objects.filter(
        tenant_id=tenant_id, fact=fact, invalidated_at__isnull=True, review__isnull=True
    ).first()
    if approved is not None:
        invalidate(approved, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
    version = waiting.version
    if Revision.objects.filter(tenant_id=tenant_id, fact=fact, version__gt=version).exists():
        version = next_version(fact)
    Revision.objects.filter(tenant_id=tenant_id, pk=waiting.pk).update(
        review=None, approved_at=now, supersedes=approved, version=version, created_at=now
    )
    readable = Revision.objects.select_related("fact").get(tenant_id=tenant_id, pk=revision_id)
    fact_changed(
        fact=fact, revision=readable, change="approved", subjects=lambda: subjects_of(waiting)
    )
    return readable


@transaction.atomic
def revision_reject(*, tenant_id: uuid.UUID, revision_id: uuid.UUID, by: str) -> Revision:
    """A reviewer rejected a pending revision: it is invalidated (`deleted`, by the reviewer)
    and keeps `review: pending`, so that no read path (history and as-of reads included) ever
    returns it. Retention does not stop a rejection: the memory was never accepted."""
    revision = (
        Revision.objects.select_for_update()
        .filter(tenant_id=tenant_id, pk=revision_id, review=Review.PENDING)
        .exclude(frozen("fact__"))  # a frozen fact is written by nobody, a reviewer included
        .first()
    )
    if revision is None:
        raise Conflict("This memory is no longer waiting for review.")
    if revision.invalidated_at is None:
        invalidate(revision, by=by, reason=InvalidationReason.DELETED, now=timezone.now())
    return revision
