"""Writing a new fact: its checks, its reads in one round trip, its dedup against what the
reader can already read, and the fact, first revision and subjects in one more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from api.errors import (
    Forbidden,
    ValidationFailed,
)
from api.transactions import service_atomic
from compiled import Read, read_ahead
from embeddings.budget import Embedded
from facts.authority import Door, Governed, authorize, subject_set
from facts.models import (
    Fact,
    Review,
    Revision,
)
from facts.provenance import attribution_of
from facts.retention import (
    Retention,
    RetentionInput,
    cap_cull,
    retention_policy_of,
)
from facts.review import agent_write_review
from facts.revisions import (
    Draft,
    embedding_for_write,
    write_revision,
)
from facts.scopes import (
    SCOPE_KEYS,
    SubjectInput,
    default_subjects,
    persons_of_write,
    resolve_scope,
    scope_of,
    scope_queries,
)
from facts.slots import slot_holder
from facts.supersede import adds_to, fact_supersede
from facts.write_policy import (
    cap_of,
    checked_write_policy,
    dedup_scope_of,
    duplicate,
    write_policy_query,
)
from facts.writes import Outcome, WriteResult, check_validity, queued_for_review
from kindmem.access import Principal, Readers, readers_for, readers_queries
from kindmem.holds import assert_not_held, holds_query
from kindmem.threads import thread_check_fact


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
    door: Door = Door.API,
) -> WriteResult:
    """Write a new fact (version 1, trust `asserted`, attributed to the principal; an agent's
    run writes `unverified`, and a fact of its that must wait for review (`facts.review`:
    wide-scope, instruction-like, hidden-characters) is written `review: pending` with an
    approval, like `remember`).

    A current fact of the same type, scope and slot whose content and validity hash equally is
    returned unchanged (the 003 seed's content dedup): writing the same thing twice is one fact.
    When the write brings something the fact lacks (a retention field, tags, subjects, a source),
    that fact's next revision applies it (`fact_supersede`, outcome `superseded`). A keyed
    write whose slot (type, key, exact scope) a live fact already holds is that fact's next
    revision too, under the supersede rules (`_write_into_slot`), never a second fact.
    Refused with `erasure-in-progress` for a held person, and with `forbidden` for a scope the
    writer could not read or a retention or subject it may not set (`facts.authority`); in
    each case nothing is written. `step_id` and `tool_call_id` are
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
        policy = checked_write_policy(principal.tenant_id, type, content)
        existing = duplicate(dedup_scope_of(policy), fact, draft, readers)
        if existing is not None:
            return _write_again(principal, existing, draft, subjects, retention, tags, door)
        holder = _slot_holder(principal, fact, readers)
        if holder is not None:
            return _write_into_slot(principal, holder, draft, subjects, retention, tags, door)
        return _write_new_fact(
            principal,
            fact,
            draft,
            subjects=about,
            retention=retention,
            cap=cap_of(policy),
            readers=readers,
            embedded=embedding.result(),  # before this write takes any lock
            door=door,
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
    check_validity(draft.valid_from, draft.valid_until)
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


def _slot_holder(principal: Principal, fact: Fact, readers: Readers) -> Fact | None:
    """The live fact already holding this keyed write's slot (type, key, exact scope), by
    `remember`'s rule (`facts.slots.slot_holder`): another agent's fact is not a run's slot."""
    if fact.key is None:
        return None  # keyless facts are many per scope: no slot to fill
    run = principal.run
    return slot_holder(
        principal.tenant_id,
        fact.type,
        fact.key,
        scope_of(fact),
        agent_id=run.agent.agent_id if run is not None else None,
        readers=readers,
    )


def _write_into_slot(
    principal: Principal,
    holder: Fact,
    draft: Draft,
    subjects: Sequence[SubjectInput] | None,
    retention: RetentionInput | None,
    tags: Sequence[str],
    door: Door,
) -> WriteResult:
    """A keyed write into a slot a live fact already holds: that fact's next revision, under
    exactly the supersede rules (`fact_supersede`: the authority table's 403 on a field the
    type's `mutable_fields` keeps, a run's `asserted-overwrite` review over a person's, an
    app's or staff's value, a run's 403 on a verified fact or another agent's).

    Why a revision rather than a 409 `conflict` naming the fact: a key names a slot (README
    "Dedup"; `remember`'s slots), so writing a key is "this slot's value is now ...", the
    last-write-wins a POST of the same key has always meant to an app re-sending its state
    (the seed's `entityId`); a 409 would turn every such upsert into a read-then-supersede
    round trip, and buy no safety, since the supersede it would redirect to obeys the same
    rules. What must never happen is what used to: a second fact beside the first, read
    first, shadowing an asserted, verified or immutable value without any of those rules."""
    return fact_supersede(
        principal=principal,
        fact_id=holder.pk,
        content=draft.content,
        subjects=subjects,
        valid_from=draft.valid_from,
        valid_until=draft.valid_until,
        observed_at=draft.observed_at,
        retention=retention,
        source=draft.source,
        caused_by_log_id=draft.caused_by_log_id,
        tags=tags,
        step_id=draft.step_id,
        tool_call_id=draft.tool_call_id,
        door=door,
    )


def _write_again(
    principal: Principal,
    existing: Revision,
    draft: Draft,
    subjects: Sequence[SubjectInput] | None,
    retention: RetentionInput | None,
    tags: Sequence[str],
    door: Door,
) -> WriteResult:
    """A write of content the fact already holds: unchanged, unless it brings something new
    about it (a legal hold, tags, subjects, a source), which is never dropped: revisions are
    immutable, so it is the fact's next revision."""
    if not adds_to(
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
        door=door,
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
    door: Door,
) -> WriteResult:
    """The fact, its first revision and subjects, written in one round trip, queued for review
    where it must wait. The writer may only write where it could read: the same SQL guard as
    every read, on the fact as written, in that round trip; a refusal undoes all three (this
    service's savepoint, or the request's rollback: api/transactions.py)."""
    policy = Retention.of_policy(fact.tenant_id, fact.type)
    kept = policy.overridden_by(retention)
    # a first write's baseline: the type's policy and the scope's default subjects
    authorize(
        principal,
        before=Governed(policy, subject_set(default_subjects(scope_of(fact)))),
        after=Governed(kept, subject_set(subjects)),
        door=door,
    )
    now = timezone.now()
    fact.created_at = now
    needed = agent_write_review().needed(
        principal,
        fact,
        draft.content,
        beside=(draft.source,),
        identifiers=(draft.step_id, draft.tool_call_id),
    )
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
            "This credential may not write into that scope.", details={"scope": scope_of(fact)}
        )
    if cap is not None:
        cap_cull(fact, cap, principal=principal, now=now)
    created = WriteResult(written.revision, Outcome.CREATED, stored=written.stored)
    return queued_for_review(principal, created, needed)


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
        write_policy_query(tenant_id, type),
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
