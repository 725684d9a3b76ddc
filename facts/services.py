"""Writes to facts: create, supersede, verify, delete, and a reviewer's approve and reject of a
revision waiting for review. One transaction each.

Every write takes the caller's `Principal`: attribution, the tenant and what the writer may
touch come from the credential, never from the request body. A writer may only write into
containers it could read, checked with the same SQL guard reads use.

The parts live beside this module: scopes (`facts.scopes`), retention and cap-cull
(`facts.retention`), attribution and hashing (`facts.provenance`), the revision write core
(`facts.revisions`), an agent's write rules (`facts.agent_writes`) and its review
(`facts.review`), links (`facts.links`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.utils import timezone

from api.errors import (
    Conflict,
    FactNotFound,
    Forbidden,
    InvalidFact,
    RetentionViolation,
    ValidationFailed,
)
from api.transactions import service_atomic
from compiled import Read, compiled, read_ahead
from embeddings.budget import Embedded
from facts.agent_writes import check_run_may_alter
from facts.merge_patch import patched
from facts.models import (
    DedupScope,
    Fact,
    InvalidationReason,
    Review,
    Revision,
    Trust,
    WritePolicy,
    WritePolicyKind,
)
from facts.provenance import Attribution, attribution_of, content_hash
from facts.retention import (
    Retention,
    RetentionInput,
    cap_cull,
    check_may_weaken,
    invalidate,
    retention_forbids_delete,
    retention_policy_of,
)
from facts.review import ReviewNeeded, agent_write_review
from facts.revisions import (
    Draft,
    Verification,
    check_expected,
    embed_for_write,
    embedded_copy,
    embedding_for_write,
    lock_current,
    next_version,
    subjects_of,
    write_revision,
)
from facts.scopes import (
    SCOPE_KEYS,
    SubjectInput,
    default_subjects,
    persons_of_write,
    resolve_scope,
    scope_queries,
)
from kindmem.access import Principal, PrincipalKind, Readers, readers_for, readers_queries
from kindmem.content_schema import check_content
from kindmem.holds import assert_not_held, holds_query
from kindmem.threads import thread_check_fact


class Outcome(StrEnum):
    CREATED = "created"
    SUPERSEDED = "superseded"
    VERIFIED = "verified"
    DELETED = "deleted"
    UNCHANGED = "unchanged"  # a content-hash dedup: nothing written


@dataclass(frozen=True)
class WriteResult:
    revision: Revision
    outcome: Outcome
    # an agent's write that waits for a person (`review: pending`): why, and its approval
    reasons: list[str] = field(default_factory=list)
    approval_id: uuid.UUID | None = None
    # the revision as stored (`facts.revisions.stored_revision`), where the write read it in
    # its own round trip; else None, and its response reads it
    stored: Revision | None = None


def _check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    if valid_from and valid_until and valid_from >= valid_until:
        raise InvalidFact(details={"valid_until": ["Must be after valid_from."]})


def _queued(principal: Principal, result: WriteResult, needed: ReviewNeeded) -> WriteResult:
    """The write's result, its revision queued for review when it must wait."""
    if not needed:
        return result
    approval_id = agent_write_review().open(
        principal=principal, revision=result.revision, needed=needed
    )
    return dataclasses.replace(result, reasons=needed.reasons, approval_id=approval_id)


def _adds_to(
    current: Revision,
    *,
    subjects: Sequence[SubjectInput] | None,
    retention: RetentionInput | None,
    source: Any,
    tags: Sequence[str] = (),
) -> bool:
    """Whether a write of the current revision's very content would still change something:
    other subjects, retention, source, or tags the fact lacks. What the write leaves out is
    not a change. `observed_at` and `caused_by_log_id` are this write's provenance, not the
    fact's: saying the same thing again, seen later, changes nothing (the content dedup)."""
    if subjects is not None and {(s.kind, s.id) for s in subjects} != {
        (s.kind, s.subject_id) for s in current.subjects.all()
    }:
        return True
    kept = Retention.of_revision(current)
    if retention is not None and kept.overridden_by(retention) != kept:
        return True
    if source is not None and source != current.source:
        return True
    return bool(set(tags) - set(current.fact.tags))


@service_atomic
def fact_create(
    *,
    principal: Principal,
    type: str,
    content: Any,
    scope: Mapping[str, Any] | None = None,
    key: str | None = None,
    tags: Sequence[str] = (),
    subjects: Sequence[SubjectInput] | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    observed_at: datetime | None = None,
    retention: RetentionInput | None = None,
    source: Any = None,
    caused_by_log_id: Sequence[str] = (),
    step_id: str | None = None,
    tool_call_id: str | None = None,
) -> WriteResult:
    """Write a new fact (version 1, trust `asserted`, attributed to the principal; an agent's
    run writes `unverified`, and a fact of its that must wait for review (`facts.review`:
    wide-scope, instruction-like, hidden-characters) is written `review: pending` with an
    approval, like `remember`).

    A current fact of the same type, scope and slot whose content and validity hash equally is
    returned unchanged (the 003 seed's content dedup): writing the same thing twice is one fact.
    When the write brings something the fact lacks (a retention field, tags, subjects, a source),
    that fact's next revision applies it (`fact_supersede`, outcome `superseded`).
    Refused with `erasure-in-progress` for a held person, and with `forbidden` for a scope the
    writer could not read; in both cases nothing is written. `step_id` and `tool_call_id` are
    the run step that wrote it (provenance), for callers that know it.
    """
    # The content is embedded on the embedding threads while the write reads (the model
    # releases the GIL): a duplicate's vector is thrown away, every new fact waits less.
    embedding = embedding_for_write(content)
    draft = Draft(
        content=content,
        valid_from=valid_from,
        valid_until=valid_until,
        observed_at=observed_at,
        source=source,
        caused_by_log_id=caused_by_log_id,
        step_id=step_id,
        tool_call_id=tool_call_id,
    )
    # every read below that depends only on the request comes from one round trip
    with read_ahead(*_create_reads(principal, type, scope or {}, subjects)):
        fact, about = _new_fact(principal, type, scope or {}, key, tags, subjects, draft)
        readers = readers_for(principal)
        policy = _checked_write_policy(principal.tenant_id, type, content)
        existing = _duplicate(dedup_scope_of(policy), fact, draft, readers)
        if existing is not None:
            return _write_again(principal, existing, draft, subjects, retention, tags)
        return _write_new_fact(
            principal,
            fact,
            draft,
            subjects=about,
            retention=retention,
            cap=_cap_of(policy),
            readers=readers,
            embedded=embedding.result(),  # before this write takes any lock
        )


def _new_fact(
    principal: Principal,
    type: str,
    scope: Mapping[str, Any],
    key: str | None,
    tags: Sequence[str],
    subjects: Sequence[SubjectInput] | None,
    draft: Draft,
) -> tuple[Fact, list[SubjectInput]]:
    """The fact to write (not saved) and whom it is about, once its scope, validity, subjects,
    holds and thread are checked."""
    tenant_id = principal.tenant_id
    resolved = resolve_scope(tenant_id, scope)
    _check_validity(draft.valid_from, draft.valid_until)
    about = list(subjects) if subjects is not None else default_subjects(resolved)
    fact = Fact(tenant_id=tenant_id, type=type, key=key, tags=sorted(set(tags)), **resolved)
    assert_not_held(tenant_id, persons_of_write(fact, about))
    if fact.thread_id:
        thread_check_fact(
            tenant_id=tenant_id,
            thread_id=fact.thread_id,
            project_id=fact.project_id,
            participant_id=fact.participant_id,
            user_id=fact.user_id,
        )
    return fact, about


def _checked_write_policy(tenant_id: uuid.UUID, type: str, content: Any) -> WritePolicy | None:
    """The type's write policy, once the content fits its schema."""
    policy = _write_policy(tenant_id, type).first()
    check_content([policy.content_schema if policy else None], content, type=type)
    return policy


def _cap_of(policy: WritePolicy | None) -> int | None:
    """The bounded ring's size, for a cap-cull type."""
    if policy is not None and policy.policy == WritePolicyKind.CAP_CULL:
        return policy.max_records
    return None


def _write_again(
    principal: Principal,
    existing: Revision,
    draft: Draft,
    subjects: Sequence[SubjectInput] | None,
    retention: RetentionInput | None,
    tags: Sequence[str],
) -> WriteResult:
    """A write of content the fact already holds: unchanged, unless it brings something new
    about it (a legal hold, tags, subjects, a source), which is never dropped: revisions are
    immutable, so it is the fact's next revision."""
    if not _adds_to(
        existing, subjects=subjects, retention=retention, source=draft.source, tags=tags
    ):
        return WriteResult(existing, Outcome.UNCHANGED)
    return fact_supersede(
        principal=principal,
        fact_id=existing.fact_id,
        content=draft.content,
        subjects=subjects,
        valid_from=draft.valid_from,
        valid_until=draft.valid_until,
        observed_at=draft.observed_at,
        retention=retention,
        source=draft.source,
        caused_by_log_id=draft.caused_by_log_id,
        tags=tags,
    )


def _write_new_fact(
    principal: Principal,
    fact: Fact,
    draft: Draft,
    *,
    subjects: list[SubjectInput],
    retention: RetentionInput | None,
    cap: int | None,
    readers: Readers,
    embedded: Embedded,
) -> WriteResult:
    """The fact, its first revision and subjects, written in one round trip, queued for review
    where it must wait. The writer may only write where it could read: the same SQL guard as
    every read, on the fact as written, in that round trip; a refusal undoes all three (this
    service's savepoint, or the request's rollback: api/transactions.py)."""
    now = timezone.now()
    fact.created_at = now
    needed = agent_write_review().needed(principal, fact, draft.content)
    kept = Retention.of_policy(fact.tenant_id, fact.type).overridden_by(retention)
    written = write_revision(
        fact=fact,
        version=1,
        draft=draft,
        who=attribution_of(principal),
        subjects=subjects,
        retention=kept,
        expires_at=kept.expires_at(now),
        review=Review.PENDING if needed else None,
        embedded=embedded,
        now=now,
        new_fact=True,
        writable_for=readers,
        read_back=True,
    )
    if not written.writable:
        raise Forbidden(
            "This credential may not write into that scope.", details={"scope": _scope_of(fact)}
        )
    if cap is not None:
        cap_cull(fact, cap, principal=principal, now=now)
    created = WriteResult(written.revision, Outcome.CREATED, stored=written.stored)
    return _queued(principal, created, needed)


def _scope_of(fact: Fact) -> dict[str, Any]:
    return {k: getattr(fact, k) for k in SCOPE_KEYS}


def _create_reads(
    principal: Principal,
    type: str,
    scope: Mapping[str, Any],
    subjects: Sequence[SubjectInput] | None,
) -> list[Read]:
    """What `fact_create` reads before it writes, from the request alone: the scope's
    containers, the writer's readers, the type's write and retention policies, the erasure holds
    of the persons the write is about. A request `fact_create` refuses before one of these reads
    has read a little more; one whose persons cannot be told yet (a bad subject) reads its holds
    when `fact_create` asks, after refusing the subject."""
    tenant_id = principal.tenant_id
    reads = [
        *scope_queries(tenant_id, scope),
        *readers_queries(principal),
        _write_policy(tenant_id, type),
        retention_policy_of(tenant_id, type),
    ]
    if set(scope) <= set(SCOPE_KEYS):
        values = {k: (str(v) if v not in (None, "") else None) for k, v in scope.items()}
        fact = Fact(**{k: values.get(k) for k in ("participant_id", "user_id", "thread_id")})
        try:
            given = subjects if subjects is not None else default_subjects(values)
            persons = persons_of_write(fact, given)
        except ValidationFailed:  # `fact_create` refuses the subject itself, with its message
            persons = []
        if (holds := holds_query(tenant_id, persons)) is not None:
            reads.append(holds)
    return reads


def type_content_schema(tenant_id: uuid.UUID, type: str) -> dict[str, Any] | None:
    """The tenant's JSON Schema for this type's content (its write policy's), if it has one."""
    policy = _write_policy(tenant_id, type).first()
    return policy.content_schema if policy else None


@compiled()
def _write_policy(tenant_id: uuid.UUID, type: str) -> Any:
    return WritePolicy.objects.filter(tenant_id=tenant_id, fact_type=type).order_by("pk")[:1]


def dedup_scope_of(policy: WritePolicy | None) -> str:
    """How a type's writes dedup (seed 003's `DedupScope`): as its policy says, else `slot`
    for last-write-wins (kindmem's default, README "Dedup": a slot's key is part of what a fact
    is, so equal values of two slots stay two facts) and `entity` for a bounded ring (the
    seed's: two equal turns of a conversation are two records)."""
    if policy is not None and policy.dedup_scope:
        return policy.dedup_scope
    if policy is not None and policy.policy == WritePolicyKind.CAP_CULL:
        return DedupScope.ENTITY
    return DedupScope.SLOT


def _duplicate(dedup: str, fact: Fact, draft: Draft, readers: Readers) -> Revision | None:
    """The live, readable revision this write of `fact` would repeat, by the content's hash,
    under the type's dedup scope."""
    if dedup == DedupScope.ENTITY and fact.key is None:
        return None  # a keyless write is a new entity: never collapsed into another
    hash_ = content_hash(draft.content, draft.valid_from, draft.valid_until)
    same = {f"fact__{k}": v for k, v in _scope_of(fact).items()}
    now = timezone.now()
    if dedup == DedupScope.CONTENT:
        return _same_content(fact.tenant_id, fact.type, hash_, same, readers, now).first()
    return _same(fact.tenant_id, fact.type, fact.key, hash_, same, readers, now).first()


# The dedup's two guarded reads: by the content's hash, its index the plan whatever the values
# (a generic plan)
@compiled(generic=True)
def _same_content(
    tenant_id: uuid.UUID,
    type: str,
    hash_: str,
    same: dict[str, Any],
    readers: Readers,
    now: datetime,
) -> Any:
    """`.first()` of the reader's live revisions of that type and scope with that content,
    under any slot key."""
    return (
        Revision.objects.of_tenant(tenant_id)
        .live(now)
        .filter(fact__type=type, content_hash=hash_, **same)
        .readable_by(readers)
        .select_related("fact")
        .order_by("pk")[:1]
    )


@compiled(generic=True)
def _same(
    tenant_id: uuid.UUID,
    type: str,
    key: str | None,
    hash_: str,
    same: dict[str, Any],
    readers: Readers,
    now: datetime,
) -> Any:
    """`.first()` of the reader's live revisions of that type, slot, scope and content."""
    return (
        Revision.objects.of_tenant(tenant_id)
        .live(now)
        .filter(fact__type=type, fact__key=key, content_hash=hash_, **same)
        .readable_by(readers)
        .select_related("fact")
        .order_by("pk")[:1]
    )


@service_atomic
def fact_supersede(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    content: Any,
    expected_version: int | None = None,
    subjects: Sequence[SubjectInput] | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    observed_at: datetime | None = None,
    retention: RetentionInput | None = None,
    source: Any = None,
    caused_by_log_id: Sequence[str] = (),
    tags: Sequence[str] = (),
    step_id: str | None = None,
    tool_call_id: str | None = None,
) -> WriteResult:
    """Write the fact's next revision (version + 1, `supersedes` the current one, which is
    invalidated `superseded`). With `expected_version`, a fact that moved on is a `conflict`.
    A retention given replaces the current revision's field by field; `tags` (from a re-posted
    `fact_create`) are added to the fact's.

    The same content and validity as the current revision changes nothing (`unchanged`),
    unless the write brings other subjects, retention, source or tags (`_adds_to`): then the
    next revision carries the same content with those applied, and keeps its trust (a
    verified content stays verified under a new legal hold) and, when the retention is
    unchanged, its expiry.

    An agent's run may not supersede a verified fact or another agent's (`forbidden`); its new
    value that must wait for review (`facts.review`) is written `review: pending` beside the
    current revision, which stays current until a reviewer approves the new one."""
    # Embedded before the fact's row lock is taken: no writer queues behind the network.
    embedded = embed_for_write(content)
    fact, current = lock_current(principal, fact_id)
    _check_may_supersede(
        principal, fact, current, expected_version, content, valid_from, valid_until
    )
    about = list(subjects) if subjects is not None else subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, about))
    kept = Retention.of_revision(current)
    new_retention = kept.overridden_by(retention)
    check_may_weaken(principal, kept, new_retention)
    same_content = content_hash(content, valid_from, valid_until) == current.content_hash
    if same_content and not _adds_to(
        current, subjects=subjects, retention=retention, source=source, tags=tags
    ):
        return WriteResult(current, Outcome.UNCHANGED)
    new_tags = _with_new_tags(fact, tags)
    needed = agent_write_review().needed(principal, fact, content)
    waits = bool(needed)
    _save_new_tags(fact, new_tags, waits=waits)
    who = attribution_of(principal)
    now = timezone.now()
    if not waits:
        invalidate(current, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
    carried = _carried_over(principal, fact, current, who, kept, new_retention, same_content, waits)
    written = write_revision(
        fact=fact,
        version=next_version(fact),
        draft=Draft(
            content=content,
            valid_from=valid_from,
            valid_until=valid_until,
            observed_at=observed_at,
            source=source if source is not None else current.source,
            caused_by_log_id=caused_by_log_id,
            step_id=step_id,
            tool_call_id=tool_call_id,
        ),
        who=who,
        subjects=about,
        retention=new_retention,
        expires_at=carried.expires_at,
        # A value that waits supersedes nothing yet: `revision_approve` links it.
        supersedes=None if waits else current,
        trust=carried.trust,
        verified=carried.verified,
        review=Review.PENDING if waits else None,
        approved_at=carried.approved_at,
        embedded=embedded,
        now=now,
        read_back=True,  # what the response renders, read in the write's round trip
    )
    superseded = WriteResult(written.revision, Outcome.SUPERSEDED, stored=written.stored)
    return _queued(principal, superseded, needed)


def _check_may_supersede(
    principal: Principal,
    fact: Fact,
    current: Revision,
    expected_version: int | None,
    content: Any,
    valid_from: datetime | None,
    valid_until: datetime | None,
) -> None:
    """Refuse a supersede the run may not make, of a fact that moved on, with a validity that
    ends before it starts, or with content the type's schema refuses."""
    check_run_may_alter(principal, fact, current)
    check_expected(current, expected_version)
    _check_validity(valid_from, valid_until)
    check_content([type_content_schema(principal.tenant_id, fact.type)], content, type=fact.type)


def _with_new_tags(fact: Fact, tags: Sequence[str]) -> list[str]:
    """The tags of `tags` the fact lacks, added to it in memory (what the review reads)."""
    new_tags = sorted(set(tags) - set(fact.tags))
    if new_tags:
        fact.tags = sorted({*fact.tags, *new_tags})
    return new_tags


def _save_new_tags(fact: Fact, new_tags: list[str], *, waits: bool) -> None:
    """The fact's new tags, saved; refused for a value that waits for review: tags are the
    fact's, not a revision's, and cannot wait for a reviewer beside it."""
    if not new_tags:
        return
    if waits:
        raise Forbidden(
            "New tags on this fact would be read before its review; write them without them.",
            details={"tags": new_tags},
        )
    Fact.objects.filter(pk=fact.pk).update(tags=fact.tags)


@dataclass(frozen=True)
class _Carried:
    """What a next revision takes over from the current one."""

    expires_at: datetime | None
    trust: str | None = None  # None: the writer's
    verified: Verification | None = None
    approved_at: datetime | None = None


def _carried_over(
    principal: Principal,
    fact: Fact,
    current: Revision,
    who: Attribution,
    kept: Retention,
    new_retention: Retention,
    same_content: bool,
    waits: bool,
) -> _Carried:
    """New content starts afresh (the writer's trust, the retention's expiry). The same
    content with only what is said about it changed keeps the trust it had (an agent's write
    stays unverified), its approval unless the new value waits, and its expiry unless the
    retention moved."""
    expires_at = new_retention.expires_at(fact.created_at)
    if not same_content:
        return _Carried(expires_at=expires_at)
    trust = who.trust if principal.kind == PrincipalKind.RUN else current.trust
    verified = None
    if trust == Trust.VERIFIED:
        if current.verified_by and current.verified_at:
            verified = Verification(by=current.verified_by, at=current.verified_at)
        expires_at = None if new_retention.legal_hold else new_retention.keep_until
    elif new_retention == kept:
        expires_at = current.expires_at
    approved_at = None if waits else current.approved_at
    return _Carried(expires_at, trust, verified, approved_at)


def fact_patch(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    patch: Any,
    expected_version: int | None = None,
) -> WriteResult:
    """A JSON merge patch (RFC 7386) of the fact's content and validity, restricted to its
    type's mutable fields (`WritePolicy.mutable_fields`), written as the next revision by
    `fact_supersede`: the same review, retention, hold and run rules, and the same outcome.

    The patch is applied to the revision read here, and written only if that revision is still
    the current one (`expected_version` is always passed on): a concurrent write answers
    `conflict` rather than being overwritten by a patch computed from what it replaced."""
    current = _current_readable(principal, fact_id)
    check_expected(current, expected_version)
    policy = _write_policy(principal.tenant_id, current.fact.type).first()
    result = patched(
        content=current.content,
        valid_from=current.valid_from,
        valid_until=current.valid_until,
        patch=patch,
        mutable_fields=policy.mutable_fields if policy else (),
    )
    return fact_supersede(
        principal=principal,
        fact_id=current.fact_id,
        content=result.content,
        expected_version=current.version,
        valid_from=result.valid_from,
        valid_until=result.valid_until,
    )


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
    check_content([type_content_schema(principal.tenant_id, fact.type)], content, type=fact.type)
    subjects = subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, subjects))
    if content_hash(content, None, None) == current.content_hash:
        return WriteResult(current, Outcome.UNCHANGED)
    detected = agent_write_review().needed(principal, fact, content)
    why = [*reasons, *(r for r in detected.reasons if r not in reasons)]
    if not why:
        raise ValueError("a proposal waits for a reviewer: name at least one reason")
    who = attribution_of(principal)
    now = timezone.now()
    retention = Retention.of_revision(current)
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
        embedded=embedded,
        now=now,
    ).revision
    needed = ReviewNeeded(why, detected.findings)
    return _queued(principal, WriteResult(revision, Outcome.SUPERSEDED), needed)


def _current_readable(principal: Principal, fact_id: uuid.UUID | str) -> Revision:
    try:
        ident = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    current = (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers_for(principal))
        .filter(fact_id=ident)
        .select_related("fact")
        .first()
    )
    if current is None:
        raise FactNotFound()
    return current


def can_verify(principal: Principal) -> bool:
    """A person with the right: a tenant admin or a Kindgi user; never an app or an agent run."""
    return principal.kind in {PrincipalKind.ADMIN, PrincipalKind.USER}


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
    if not can_verify(principal):
        raise Forbidden("Only a tenant admin or a Kindgi user may verify a fact.")
    fact, current = lock_current(principal, fact_id, readers)
    check_expected(current, expected_version)
    subjects = subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, subjects))
    if current.trust == Trust.VERIFIED:
        return WriteResult(current, Outcome.UNCHANGED)
    who = attribution_of(principal)
    now = timezone.now()
    invalidate(current, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
    retention = Retention.of_revision(current)
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


@service_atomic
def fact_delete(*, principal: Principal, fact_id: uuid.UUID | str) -> Revision:
    """Invalidate the current revision (`deleted`): no read returns the fact afterwards, and
    its history stays. Refused with `retention-violation` while a legal hold, a future
    `keep_until` or an unelapsed `keep_days` forbids it, and with `forbidden` for an agent's run
    that may not alter the fact (`check_run_may_alter`)."""
    fact, current = lock_current(principal, fact_id)
    check_run_may_alter(principal, fact, current, deleting=True)
    now = timezone.now()
    reason = retention_forbids_delete(current, fact, now)
    if reason is not None:
        raise RetentionViolation(
            f"Retention forbids deleting this fact ({reason}).", details={"reason": reason}
        )
    invalidate(
        current, by=attribution_of(principal).label, reason=InvalidationReason.DELETED, now=now
    )
    return current


@transaction.atomic
def revision_approve(*, tenant_id: uuid.UUID, revision_id: uuid.UUID, by: str) -> Revision:
    """A reviewer approved a pending revision: it becomes the fact's current revision as it is
    (still `unverified`), and the approved value it waited beside is invalidated `superseded`
    (by the reviewer), in this one transaction. Its record time (`created_at`) becomes now:
    until now no read, as-of reads included, could see it. It takes the next version when
    another writer numbered one meanwhile. A revision that is no longer pending and current is
    a `conflict`."""
    fact_id = (
        Revision.objects.filter(tenant_id=tenant_id, pk=revision_id)
        .values_list("fact_id", flat=True)
        .first()
    )
    # The fact's row lock first, as every writer of a fact takes it (no deadlock, and the
    # approved value read below is the one no concurrent supersede is replacing).
    fact = (
        Fact.objects.select_for_update().filter(tenant_id=tenant_id, pk=fact_id).first()
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
    now = timezone.now()
    approved = Revision.objects.filter(
        tenant_id=tenant_id, fact=fact, invalidated_at__isnull=True, review__isnull=True
    ).first()
    if approved is not None:
        invalidate(approved, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
    version = waiting.version
    if Revision.objects.filter(fact=fact, version__gt=version).exists():
        version = next_version(fact)
    Revision.objects.filter(pk=waiting.pk).update(
        review=None, approved_at=now, supersedes=approved, version=version, created_at=now
    )
    return Revision.objects.select_related("fact").get(pk=revision_id)


@transaction.atomic
def revision_reject(*, tenant_id: uuid.UUID, revision_id: uuid.UUID, by: str) -> Revision:
    """A reviewer rejected a pending revision: it is invalidated (`deleted`, by the reviewer)
    and keeps `review: pending`, so that no read path (history and as-of reads included) ever
    returns it. Retention does not stop a rejection: the memory was never accepted."""
    revision = (
        Revision.objects.select_for_update()
        .filter(tenant_id=tenant_id, pk=revision_id, review=Review.PENDING)
        .first()
    )
    if revision is None:
        raise Conflict("This memory is no longer waiting for review.")
    if revision.invalidated_at is None:
        invalidate(revision, by=by, reason=InvalidationReason.DELETED, now=timezone.now())
    return revision
