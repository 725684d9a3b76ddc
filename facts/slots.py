"""An agent's slot memory, written: the facts half of the `remember` tool (approvals owns the
tool, its declarations and review reasons: `approvals.remember`).

A slot is (type, key, exact scope) filled by one agent. A new value of a slot replaces the
approved value now when it is readable now, or waits beside it for review (`review:
pending`) and replaces it when approved (`facts.services.revision_approve`); an older value
still waiting is withdrawn. Idempotency: one revision per (run, tool call) is a unique
constraint. A retry whose first call already committed finds it; a concurrent retry's insert
waits on the first's and then fails the constraint inside a savepoint, after which it returns
what the first wrote.

Retention and the unverified window (a choice the seed leaves open): a revision's `keep_days`
both sets its expiry and forbids deleting it until it elapses, which must not stop a reviewer
from rejecting an agent's memory or a person from deleting it. So the declaration's
`keep_days` goes into `expires_at` only (now + keep_days: the unverified window), and the
revision's retention columns carry the tenant's policy for the type, as for any other fact.
Verifying (`fact_verify`) lifts the window and only the window.
"""

from __future__ import annotations

import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from api.errors import MemoryLimitReached
from facts.authority import Governed, authorize, overwrite_reasons, subject_set
from facts.models import AttributionKind, Fact, InvalidationReason, Review, Revision, Trust
from facts.provenance import attribution_of
from facts.retention import Retention, invalidate
from facts.revisions import Draft, embed_for_write, next_version, write_revision
from facts.scopes import SubjectInput, default_subjects, persons_of_write, resolve_scope
from facts.write_policy import write_policy_query
from kindmem.access import Principal, Readers, readers_for
from kindmem.holds import assert_not_held, frozen
from kindmem.models import Run


class SlotOutcome(StrEnum):
    CREATED = "created"
    SUPERSEDED = "superseded"
    REPLAYED = "replayed"  # this run's tool call already wrote it
    UNCHANGED = "unchanged"  # the person's memory of this type already holds this value


@dataclass(frozen=True)
class SlotWrite:
    revision: Revision
    outcome: SlotOutcome
    # whether the new value waits for review (the caller's reasons, or a verified slot value)
    pending: bool = False
    # the slot's value is verified, so the new one waits (`verified-slot`)
    verified_slot: bool = False
    # the slot's value is one a person, an app or staff asserted (`asserted-overwrite`)
    asserted_slot: bool = False
    # the slot's approved value, when this one replaced it (not when this one waits for review:
    # the approved value stays current until a reviewer approves its successor)
    replaced: Revision | None = None
    # earlier values for the slot still waiting for review, closed as `superseded`
    withdrawn: list[Revision] = field(default_factory=list)


def replayed(tenant_id: uuid.UUID, run: Run, tool_call_id: str) -> Revision | None:
    """The revision this run's tool call already wrote, if any."""
    return (
        Revision.objects.of_tenant(tenant_id)
        .filter(generated_by_run=run, generated_by_tool_call_id=tool_call_id)
        .select_related("fact")
        .first()
    )


def normalised(text: str) -> str:
    """A memory's text as two writes of the same value compare: compatibility forms folded,
    case folded, whitespace collapsed, a closing full stop or exclamation mark dropped
    ("Prefers email." and "prefers  email" are one value)."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.rstrip(".!").rstrip()


# How many of the person's current memories of one type a write compares its value with.
SAME_VALUE_CANDIDATES = 200


def same_value(
    principal: Principal, type: str, resolved: dict[str, Any], text: str
) -> Revision | None:
    """A current, unexpired revision (approved or waiting for review) of a fact of `type` in
    exactly the scope this write lands in, that the run may read, whose text is `text` after
    `normalised`: the seed's entity dedup, where the entity is the person's (or thread's)
    memory of this type, whichever run, thread or slot wrote it."""
    same = {f"fact__{c}": v for c, v in resolved.items() if v is not None}
    empty = {f"fact__{c}__isnull": True for c, v in resolved.items() if v is None}
    candidates = (
        Revision.objects.of_tenant(principal.tenant_id)
        .current()
        .unexpired()
        .readable_by(readers_for(principal))
        .filter(fact__type=type, **same, **empty)
        .select_related("fact")
        .order_by("-created_at", "id")[:SAME_VALUE_CANDIDATES]
    )
    wanted = normalised(text)
    return next(
        (
            revision
            for revision in candidates
            if isinstance(revision.content, dict)
            and isinstance(revision.content.get("text"), str)
            and normalised(revision.content["text"]) == wanted
        ),
        None,
    )


def _canonical(value: Any) -> str:
    """A scope value as the slot's lock names it: a UUID in one spelling, whoever wrote it."""
    if value is None:
        return ""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return str(value)


def slot_holder(
    tenant_id: uuid.UUID,
    type: str,
    key: str,
    resolved: dict[str, Any],
    *,
    agent_id: str | None = None,
    readers: Readers | None = None,
) -> Fact | None:
    """The fact that holds this slot, row-locked: the one rule of what a keyed slot is, for
    every door that writes one (`remember` here, `POST /v1/facts` and every import through
    `facts.create`). A slot is (type, key, exact scope); its holder is its oldest fact with a
    current revision, not frozen. For an agent's run (`agent_id`), another agent's fact is not
    its slot (README "Remember": each agent fills its own; a run never alters another agent's
    fact), but a fact a person, an app or staff asserted is everyone's: the run's new value is
    that fact's next revision (and waits, `asserted-overwrite`), never a second fact beside it.
    With `readers`, only a fact with a live revision they read holds the slot for this writer
    (what it could supersede; anything else is not its to find).

    The slot itself is locked first (a transaction-scoped advisory lock on its identity), so
    two concurrent first writes of one slot queue and the second finds the first's fact."""
    same = {c: v for c, v in resolved.items() if v is not None}
    empty = {f"{c}__isnull": True for c, v in resolved.items() if v is None}
    identity = "\x1f".join(
        [str(tenant_id), type, key, *(f"{c}={_canonical(resolved[c])}" for c in sorted(resolved))]
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [identity])
    # The subqueries name the tenant as a value: Citus routes a locking read (FOR UPDATE) only
    # to one shard, and an OR of subqueries there only when each names the tenant itself.
    holders = (
        Fact.objects.select_for_update()
        .of_tenant(tenant_id)
        .filter(type=type, key=key, **same, **empty)
        .exclude(frozen())  # kept under legal hold after an erasure: written by nobody
        .filter(
            Exists(
                Revision.objects.filter(
                    tenant_id=tenant_id,
                    fact_id=OuterRef("pk"),
                    invalidated_at__isnull=True,
                )
            )
        )
    )
    if agent_id is not None:
        by_agent = Revision.objects.filter(
            tenant_id=tenant_id,
            fact_id=OuterRef("pk"),
            attributed_kind=AttributionKind.AGENT,
        )
        # another agent's: it wrote an approved value, or one still waiting (not to withdraw)
        others = by_agent.exclude(attributed_id=agent_id).filter(
            Q(review__isnull=True) | Q(invalidated_at__isnull=True)
        )
        holders = holders.filter(Exists(by_agent.filter(attributed_id=agent_id)) | ~Exists(others))
    if readers is not None:
        holders = holders.filter(
            Exists(
                Revision.objects.live()
                .readable_by(readers)
                .filter(tenant_id=tenant_id, fact_id=OuterRef("pk"))
            )
        )
    return holders.order_by("created_at", "id").first()


def _authorize_slot(
    principal: Principal,
    approved: Revision | None,
    resolved: dict[str, Any],
    subjects: list[SubjectInput],
    content: dict[str, Any],
    retention: Retention,
    type: str,
) -> None:
    """`facts.authority.authorize` for a slot's new value: against the slot's approved value,
    else (a first write) the scope's default subjects."""
    if approved is not None:
        before = Governed(retention, subject_set(approved.subjects.all()), approved.content)
    else:
        before = Governed(retention, subject_set(default_subjects(resolved)))
    policy = write_policy_query(principal.tenant_id, type).first()
    authorize(
        principal,
        before=before,
        after=Governed(retention, subject_set(subjects), content),
        mutable_fields=policy.mutable_fields if policy else (),
    )


def _check_run_limit(run: Run) -> None:
    """At most MAX_MEMORIES_PER_RUN revisions per run. Checked after this call's write, under
    the run's row lock, so that concurrent calls of one run count each other exactly."""
    Run.objects.select_for_update().filter(tenant_id=run.tenant_id, pk=run.pk).values_list(
        "pk", flat=True
    ).first()
    written = Revision.objects.of_tenant(run.tenant_id).filter(generated_by_run=run).count()
    limit = settings.MAX_MEMORIES_PER_RUN
    if written > limit:
        raise MemoryLimitReached(
            f"This run has written {limit} memories, the most one run may.",
            details={"limit": limit},
        )


@transaction.atomic
def slot_write(
    *,
    principal: Principal,
    type: str,
    key: str | None,
    scope: dict[str, Any],
    subjects: list[SubjectInput],
    content: dict[str, Any],
    window_days: int,
    must_wait: bool,
    tool_call_id: str,
    valid_until: datetime | None = None,
    step_id: str | None = None,
    source: Any = None,
) -> SlotWrite:
    """Write an agent run's memory into its slot (see the module docstring), `review: pending`
    when `must_wait`, when the slot's approved value is verified, or when a person, an app or
    staff asserted it. Refused, writing nothing, for a held person, a run over its memory limit,
    or a change `facts.authority` forbids (subjects not the run's own, a content field the
    type's write policy keeps immutable). The slot's retention is kept (a run never changes
    it); a new slot takes the type's policy."""
    run = principal.run
    assert run is not None
    tenant_id = principal.tenant_id
    resolved = resolve_scope(tenant_id, scope)
    probe = Fact(
        tenant_id=tenant_id,
        participant_id=resolved["participant_id"],
        user_id=resolved["user_id"],
        thread_id=resolved["thread_id"],
    )
    # Before the replay: a replay answers with the first call's text, and nothing of a person
    # under erasure is answered, read or written while it runs.
    assert_not_held(tenant_id, persons_of_write(probe, subjects))
    first = replayed(tenant_id, run, tool_call_id)
    if first is not None:
        return SlotWrite(first, SlotOutcome.REPLAYED)
    held = same_value(principal, type, resolved, str(content.get("text", "")))
    if held is not None:
        return SlotWrite(held, SlotOutcome.UNCHANGED, pending=held.review == Review.PENDING)

    now = timezone.now()
    policy = Retention.of_policy(tenant_id, type)
    who = attribution_of(principal)
    window = now + timedelta(days=window_days)
    # Embedded before any lock is taken (the slot's, the run's): no writer queues behind the
    # embedder; a slow or failing one leaves the revision to the embed task.
    embedded = embed_for_write(content)

    pending = must_wait
    verified_slot = asserted_slot = False
    holder = (
        slot_holder(tenant_id, type, key, resolved, agent_id=run.agent.agent_id) if key else None
    )
    try:
        with transaction.atomic():
            # Read after the slot's lock: a concurrent writer of the slot has committed by now.
            slot = (
                list(Revision.objects.filter(fact=holder, invalidated_at__isnull=True))
                if holder is not None
                else []
            )
            approved = next((r for r in slot if r.review is None), None)
            retention = Retention.of_revision(approved) if approved is not None else policy
            _authorize_slot(principal, approved, resolved, subjects, content, retention, type)
            if approved is not None and approved.trust == Trust.VERIFIED:
                # A run never alters a verified fact on its own: the new value waits.
                verified_slot = pending = True
            asserted_slot = bool(overwrite_reasons(principal, approved))
            pending = pending or asserted_slot
            withdrawn = [r for r in slot if r.review == Review.PENDING]
            # An older value still waiting is closed: the new one is reviewed on its own.
            for older in withdrawn:
                invalidate(older, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
            # The approved value is replaced now only by a value readable now; one that waits
            # for review replaces it when approved, so the good memory stays readable
            # meanwhile, and stays the fact when the new one is rejected.
            replaced = approved if not pending else None
            if replaced is not None:
                invalidate(replaced, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
            if holder is not None:
                fact = holder
            else:
                fact = Fact(
                    tenant_id=tenant_id, type=type, key=key, created_at=now, tags=[], **resolved
                )
                fact.save(force_insert=True)
            retention_expiry = retention.expires_at(fact.created_at)
            revision = write_revision(
                fact=fact,
                version=next_version(fact) if holder is not None else 1,
                draft=Draft(
                    content=content,
                    valid_until=valid_until,
                    observed_at=now,
                    step_id=step_id,
                    tool_call_id=tool_call_id,
                    source=source,
                ),
                embedded=embedded,
                who=who,
                subjects=subjects,
                retention=retention,
                expires_at=(
                    None
                    if retention.legal_hold
                    else min(window, retention_expiry)
                    if retention_expiry
                    else window
                ),
                supersedes=replaced,
                trust=Trust.UNVERIFIED,
                review=Review.PENDING if pending else None,
                # the approved value a waiting one would replace (`facts.stale`); None: the
                # slot has none now, and approving it is refused only if one appears meanwhile
                base_version=approved.version if pending and approved is not None else None,
                now=now,
            ).revision
    except IntegrityError:
        # A concurrent call with this run and tool call committed first: answer with its result.
        first = replayed(tenant_id, run, tool_call_id)
        if first is None:
            raise
        return SlotWrite(first, SlotOutcome.REPLAYED)
    _check_run_limit(run)
    return SlotWrite(
        revision,
        SlotOutcome.SUPERSEDED if holder is not None else SlotOutcome.CREATED,
        pending=pending,
        verified_slot=verified_slot,
        asserted_slot=asserted_slot,
        replaced=replaced,
        withdrawn=withdrawn,
    )
