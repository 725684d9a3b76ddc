"""The `remember` tool's write, and the review decisions' writes to a remembered revision.

An agent chooses only the type (among those its agent declares), the text, the slot (`key`)
and how long it is true (`valid_until`). Everything else comes from the declaration and the
run: the scope, the subjects (the conversation's end user, else the run's user), `trust:
unverified`, the attribution (agent and version) and the provenance (run, step, tool call).

Retention and the unverified window (a choice the seed leaves open): a revision's `keep_days`
both sets its expiry and forbids deleting it until it elapses, which must not stop a reviewer
from rejecting an agent's memory or a person from deleting it. So the declaration's
`keep_days` goes into `expires_at` only (now + keep_days: the unverified window), and the
revision's retention columns carry the tenant's policy for the type, as for any other fact.
Verifying (`fact_verify`) lifts the window and only the window: the verified revision expires
when its retention says (the policy's `keep_days` from the fact's first write, a `keep_until`),
or never when it has none.

Idempotency: one revision per (run, tool call) is a unique constraint. A retry whose first
call already committed finds it; a concurrent retry's insert waits on the first's and then
fails the constraint inside a savepoint, after which it returns what the first wrote.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from facts.models import (
    AttributionKind,
    Fact,
    InvalidationReason,
    Review,
    Revision,
    Trust,
)
from facts.review_reasons import VERIFIED_SLOT, Finding, detect, reasons_of
from facts.services import (
    SubjectInput,
    _attribution,
    _expires_at,
    _invalidate,
    _next_version,
    _persons,
    _resolve_scope,
    _retention,
    _write_revision,
    embed_for_write,
    search_text_of,
)
from kindmem import declarations
from kindmem.access import Principal
from kindmem.errors import Conflict, Forbidden, InvalidFact, MemoryLimitReached
from kindmem.holds import assert_not_held
from kindmem.models import Run


@dataclass(frozen=True)
class RememberResult:
    revision: Revision
    # created | superseded | replayed (the seed's RememberFactResult.outcome)
    outcome: str
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # the slot's approved value, when this one replaced it (not when this one waits for review:
    # the approved value stays current until a reviewer approves its successor)
    replaced: Revision | None = None
    # an earlier value for the slot still waiting for review, closed as `superseded`
    withdrawn: list[Revision] = field(default_factory=list)


def remember_scope(declaration: declarations.MemoryDeclaration, run: Run) -> dict[str, Any]:
    """Where a declared type lands for this run. A scope the run cannot fill (a `participant`
    memory in a run with no participant) is an `invalid-fact`: nothing is written."""
    project = str(run.project_id)
    scope = declaration.scope
    if scope == "participant":
        if not run.participant_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per participant, and this run has none.",
                details={"type": ["Declared scope participant; the run names no participant."]},
            )
        return {"project_id": project, "participant_id": run.participant_id}
    if scope == "user":
        if not run.user_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per user, and this run has none.",
                details={"type": ["Declared scope user; the run names no user."]},
            )
        return {"user_id": str(run.user_id)}
    if scope == "thread":
        if not run.thread_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per thread, and this run has none.",
                details={"type": ["Declared scope thread; the run names no thread."]},
            )
        out = {"project_id": project, "thread_id": run.thread_id}
        if run.participant_id:
            out["participant_id"] = run.participant_id
        return out
    if scope == "same-project":
        return {"project_id": project}
    return {}  # tenant


def remember_subjects(run: Run) -> list[SubjectInput]:
    """Whom a remembered fact is about: the conversation's end user, else the run's user."""
    if run.participant_id:
        return [SubjectInput(kind="participant", id=run.participant_id)]
    if run.user_id:
        return [SubjectInput(kind="user", id=str(run.user_id))]
    return []


def _replay(tenant_id: uuid.UUID, run: Run, tool_call_id: str) -> Revision | None:
    return (
        Revision.objects.of_tenant(tenant_id)
        .filter(generated_by_run=run, generated_by_tool_call_id=tool_call_id)
        .select_related("fact")
        .first()
    )


def _slot_holder(
    tenant_id: uuid.UUID, type: str, key: str, resolved: dict[str, Any], agent_id: str
) -> Fact | None:
    """The fact that holds this slot, row-locked: same type, key and exact scope, filled by
    the same agent, with a current revision (pending review or not)."""
    filled_by_agent = Revision.objects.filter(
        fact_id=OuterRef("pk"), attributed_kind=AttributionKind.AGENT, attributed_id=agent_id
    )
    current = Revision.objects.filter(fact_id=OuterRef("pk"), invalidated_at__isnull=True)
    same = {c: v for c, v in resolved.items() if v is not None}
    empty = {f"{c}__isnull": True for c, v in resolved.items() if v is None}
    return (
        Fact.objects.select_for_update()
        .of_tenant(tenant_id)
        .filter(type=type, key=key, **same, **empty)
        .filter(Exists(filled_by_agent), Exists(current))
        .order_by("created_at", "id")
        .first()
    )


def _check_text(text: str) -> str:
    limit = settings.REMEMBER_MAX_CHARS
    if not text.strip():
        raise InvalidFact("A memory needs some text.", details={"text": ["Empty."]})
    if len(text) > limit:
        raise InvalidFact(
            f"The text is {len(text)} characters; at most {limit} are accepted.",
            details={"text": [f"At most {limit} characters."], "limit": limit},
        )
    if "\x00" in text:
        raise InvalidFact(details={"text": ["NUL characters are not accepted."]})
    return text


def _check_run_limit(run: Run) -> None:
    """At most MAX_MEMORIES_PER_RUN revisions per run. Checked after this call's write, under
    the run's row lock, so that concurrent calls of one run count each other exactly."""
    Run.objects.select_for_update().filter(pk=run.pk).values_list("pk", flat=True).first()
    written = Revision.objects.of_tenant(run.tenant_id).filter(generated_by_run=run).count()
    limit = settings.MAX_MEMORIES_PER_RUN
    if written > limit:
        raise MemoryLimitReached(
            f"This run has written {limit} memories, the most one run may.",
            details={"limit": limit},
        )


@transaction.atomic
def fact_remember(
    *,
    principal: Principal,
    type: str,
    text: str,
    tool_call_id: str,
    key: str | None = None,
    valid_until: datetime | None = None,
    step_id: str | None = None,
) -> RememberResult:
    """Write what an agent remembers (see the module docstring). `replayed` when this run's
    tool call already wrote it; else `superseded` when the same agent filled the slot (type,
    key, scope) before, or `created`. A memory whose declared scope is wide, or whose text
    reads like an instruction or hides characters, is written `review: pending`: no read sees
    it until a person approves it. Refused, writing nothing: an undeclared type, an empty or
    too long text, a `valid_until` in the past, a held person, a run over its memory limit."""
    if principal.kind != "run" or principal.run is None:
        raise Forbidden("Only an agent run remembers (a run token).")
    run = principal.run
    tenant_id = principal.tenant_id
    agent = run.agent
    declared = declarations.parse(agent.memory_declarations)
    declaration = declared.get(type)
    if declaration is None:
        raise InvalidFact(
            f"Agent {agent.agent_id!r} does not declare memories of type {type!r}.",
            details={"type": ["Not declared."], "declared": sorted(declared)},
        )
    text = _check_text(text)
    now = timezone.now()
    if valid_until is not None and valid_until <= now:
        raise InvalidFact(details={"valid_until": ["Must be in the future."]})

    first = _replay(tenant_id, run, tool_call_id)
    if first is not None:
        return RememberResult(first, "replayed")

    resolved = _resolve_scope(tenant_id, remember_scope(declaration, run))
    subjects = remember_subjects(run)
    probe = Fact(
        tenant_id=tenant_id,
        participant_id=resolved["participant_id"],
        user_id=resolved["user_id"],
        thread_id=resolved["thread_id"],
    )
    assert_not_held(tenant_id, _persons(probe, subjects))

    findings = detect(text, tool_names=[t for t in agent.tools if isinstance(t, str)])
    reasons = reasons_of(findings, wide_scope=declaration.is_wide)
    content: dict[str, Any] = {"text": text}
    if key is not None:
        content["key"] = key
    keep_days, keep_until, legal_hold = _retention(tenant_id, type, None)
    who = _attribution(principal)
    window = now + timedelta(days=declaration.keep_days)
    # Embedded before any lock is taken (the slot's, the run's): no writer queues behind the
    # embedder; a slow or failing one leaves the revision to the embed task.
    embedded = embed_for_write(search_text_of(content))

    pending = bool(reasons)
    by = f"{who.kind}:{who.id}"
    holder = _slot_holder(tenant_id, type, key, resolved, agent.agent_id) if key else None
    try:
        with transaction.atomic():
            # Read after the slot's lock: a concurrent writer of the slot has committed by now.
            slot = (
                list(Revision.objects.filter(fact=holder, invalidated_at__isnull=True))
                if holder is not None
                else []
            )
            approved = next((r for r in slot if r.review is None), None)
            if approved is not None and approved.trust == Trust.VERIFIED:
                # A run never alters a verified fact on its own: the new value waits.
                reasons = [*reasons, VERIFIED_SLOT]
                pending = True
            withdrawn = [r for r in slot if r.review == Review.PENDING]
            # An older value still waiting is closed: the new one is reviewed on its own.
            for older in withdrawn:
                _invalidate(older, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
            # The approved value is replaced now only by a value readable now; one that waits
            # for review replaces it when approved (`revision_approve`), so the good memory
            # stays readable meanwhile, and stays the fact when the new one is rejected.
            replaced = approved if not pending else None
            if replaced is not None:
                _invalidate(replaced, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
            if holder is not None:
                fact = holder
            else:
                fact = Fact(
                    tenant_id=tenant_id, type=type, key=key, created_at=now, tags=[], **resolved
                )
                fact.save(force_insert=True)
            retention_expiry = _expires_at(
                first_write=fact.created_at,
                keep_days=keep_days,
                keep_until=keep_until,
                legal_hold=legal_hold,
            )
            revision = _write_revision(
                fact=fact,
                version=_next_version(fact) if holder is not None else 1,
                content=content,
                embedded=embedded,
                who=who,
                subjects=subjects,
                retention=(keep_days, keep_until, legal_hold),
                valid_from=None,
                valid_until=valid_until,
                observed_at=now,
                source=None,
                caused_by_log_id=(),
                supersedes=replaced,
                trust=Trust.UNVERIFIED,
                review=Review.PENDING if pending else None,
                expires_at=(
                    None
                    if legal_hold
                    else min(window, retention_expiry)
                    if retention_expiry
                    else window
                ),
                generated_by_step_id=step_id,
                generated_by_tool_call_id=tool_call_id,
                now=now,
            )
    except IntegrityError:
        # A concurrent call with this run and tool call committed first: answer with its result.
        first = _replay(tenant_id, run, tool_call_id)
        if first is None:
            raise
        return RememberResult(first, "replayed")
    _check_run_limit(run)
    return RememberResult(
        revision,
        "superseded" if holder is not None else "created",
        reasons=reasons,
        findings=findings,
        replaced=replaced,
        withdrawn=withdrawn,
    )


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
    fact = Fact.objects.select_for_update().filter(tenant_id=tenant_id, pk=fact_id).first()
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
        _invalidate(approved, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
    version = waiting.version
    if Revision.objects.filter(fact=fact, version__gt=version).exists():
        version = _next_version(fact)
    Revision.objects.filter(pk=waiting.pk).update(
        review=None, supersedes=approved, version=version, created_at=now
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
        _invalidate(revision, by=by, reason=InvalidationReason.DELETED, now=timezone.now())
    return revision
