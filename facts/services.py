"""Writes to facts: create, supersede, verify, delete, link. One transaction each.

Every write takes the caller's `Principal`: attribution, the tenant and what the writer may
touch come from the credential, never from the request body. A writer may only write into
containers it could read, checked with the same SQL guard reads use.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from embeddings.providers import Embedder, EmbeddingFailed, get_embedder
from facts.models import (
    AttributionKind,
    EmbeddingState,
    Fact,
    FactSubjectKind,
    InvalidationReason,
    Link,
    RetentionPolicy,
    Review,
    Revision,
    Subject,
    Trust,
    WritePolicy,
    WritePolicyKind,
)
from facts.review_queue import review_open
from facts.review_reasons import Finding, detect, reasons_of, review_text
from kindmem.access import Principal, Readers, readers_for
from kindmem.errors import (
    Conflict,
    EmbeddingUnavailable,
    FactNotFound,
    Forbidden,
    InvalidFact,
    RetentionViolation,
)
from kindmem.holds import assert_not_held
from kindmem.models import Org, Project, User
from kindmem.subjects import Subject as SubjectRef
from kindmem.subjects import persons_of
from kindmem.threads import thread_check_fact

logger = logging.getLogger(__name__)

MAX_HOPS = 5
EMBED_BATCH = 64
SCOPE_KEYS = ("org_id", "project_id", "user_id", "participant_id", "thread_id", "session_id")
SCOPE_COLUMNS = SCOPE_KEYS  # Fact's scope columns carry the same names


@dataclass(frozen=True)
class RetentionInput:
    """The seed's Retention: a fact-level override of the tenant's policy for the type."""

    keep_days: int | None = None
    keep_until: datetime | None = None
    legal_hold: bool | None = None


@dataclass(frozen=True)
class WriteResult:
    revision: Revision
    # created | superseded | verified | unchanged (a content-hash dedup: nothing written)
    outcome: str
    # an agent's write that waits for a person (`review: pending`): why, and its approval
    reasons: list[str] = field(default_factory=list)
    approval_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Reached:
    """One fact a link traversal reached: how many hops away, and the link that reached it."""

    revision: Revision
    hops: int
    link: Link


@dataclass(frozen=True)
class SubjectInput:
    kind: str
    id: str


@dataclass
class _Attribution:
    kind: str
    id: str
    agent_version: str | None = None
    run_id: uuid.UUID | None = None
    trust: str = Trust.ASSERTED
    extra: dict[str, Any] = field(default_factory=dict)


def _attribution(principal: Principal) -> _Attribution:
    """PROV wasAttributedTo, from the credential: an agent for a run, a user for a Kindgi user's
    key, a service for an app or admin key."""
    if principal.kind == "run":
        run = principal.run
        assert run is not None
        return _Attribution(
            kind=AttributionKind.AGENT,
            id=run.agent.agent_id,
            agent_version=run.agent_version,
            run_id=run.id,
            # An agent's write is unverified whatever the route (remember or the facts API).
            trust=Trust.UNVERIFIED,
        )
    if principal.kind == "user":
        assert principal.user is not None
        return _Attribution(kind=AttributionKind.USER, id=str(principal.user.id))
    assert principal.api_key is not None
    return _Attribution(kind=AttributionKind.SERVICE, id=f"{principal.kind}:{principal.api_key.id}")


def content_hash(content: Any, valid_from: datetime | None, valid_until: datetime | None) -> str:
    """The dedup key: the canonical JSON of what a revision says and when it is true."""
    canonical = json.dumps(
        {
            "content": content,
            "valid_from": valid_from.isoformat() if valid_from else None,
            "valid_until": valid_until.isoformat() if valid_until else None,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def search_text_of(content: Any) -> str:
    """The text keyword and semantic search index: a string as is, `text` of an object when it
    has one, otherwise every string in it, in order."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return content["text"]
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                parts.append(str(k))
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)
        elif value is not None:
            parts.append(str(value))

    walk(content)
    return " ".join(parts)


def _expires_at(
    *, first_write: datetime, keep_days: int | None, keep_until: datetime | None, legal_hold: bool
) -> datetime | None:
    """When a revision stops being readable: never under a legal hold; else `keep_until`, or
    `keep_days` from the fact's first write; else never."""
    if legal_hold:
        return None
    if keep_until is not None:
        return keep_until
    if keep_days is not None:
        return first_write + timedelta(days=keep_days)
    return None


def _retention(
    tenant_id: uuid.UUID, fact_type: str, override: RetentionInput | None
) -> tuple[int | None, datetime | None, bool]:
    """The tenant's policy for the type, with the fact-level override winning field by field."""
    policy = RetentionPolicy.objects.filter(tenant_id=tenant_id, fact_type=fact_type).first()
    base = (policy.keep_days, None, policy.legal_hold) if policy else (None, None, False)
    return _overridden(base, override)


def _overridden(
    base: tuple[int | None, datetime | None, bool], override: RetentionInput | None
) -> tuple[int | None, datetime | None, bool]:
    """`base` (keep_days, keep_until, legal_hold) with each field `override` names replacing
    it; a field left out is kept."""
    keep_days, keep_until, legal_hold = base
    if override is not None:
        if override.keep_days is not None:
            keep_days = override.keep_days
        if override.keep_until is not None:
            keep_until = override.keep_until
        if override.legal_hold is not None:
            legal_hold = override.legal_hold
    return keep_days, keep_until, legal_hold


def _resolve_scope(tenant_id: uuid.UUID, scope: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a requested scope against the tenant: unknown or foreign containers are an
    `invalid-fact` naming the field. An org left out is the project's org."""
    unknown = set(scope) - set(SCOPE_KEYS)
    if unknown:
        raise InvalidFact(
            "Unknown scope keys.", details={f"scope.{k}": ["Unknown key."] for k in sorted(unknown)}
        )
    resolved: dict[str, Any] = {
        k: (str(v) if v not in (None, "") else None) for k, v in scope.items()
    }
    models = {"org_id": Org, "project_id": Project, "user_id": User}
    found: dict[str, Any] = {}
    for key, model in models.items():
        value = resolved.get(key)
        if value is None:
            continue
        try:
            ident = uuid.UUID(value)
        except ValueError:
            raise InvalidFact(details={f"scope.{key}": ["Not a UUID."]}) from None
        obj = model.objects.filter(tenant_id=tenant_id, id=ident).first()
        if obj is None:
            raise InvalidFact(details={f"scope.{key}": ["No such container in this tenant."]})
        found[key] = obj
    if resolved.get("participant_id") and not resolved.get("project_id"):
        raise InvalidFact(
            "A participant's fact names its project.",
            details={"scope.participant_id": ["Needs scope.project_id."]},
        )
    project = found.get("project_id")
    if project is not None:
        if "org_id" in found and found["org_id"].id != project.org_id:
            raise InvalidFact(details={"scope.org_id": ["Not the project's org."]})
        resolved["org_id"] = str(project.org_id)
    return {
        "org_id": resolved.get("org_id"),
        "project_id": resolved.get("project_id"),
        "user_id": resolved.get("user_id"),
        "participant_id": resolved.get("participant_id"),
        "thread_id": resolved.get("thread_id"),
        "session_id": resolved.get("session_id"),
    }


def _default_subjects(scope: Mapping[str, Any]) -> list[SubjectInput]:
    """Whom a fact is about when the writer does not say: its end user, else its user."""
    if scope.get("participant_id"):
        return [SubjectInput(kind=FactSubjectKind.PARTICIPANT, id=scope["participant_id"])]
    if scope.get("user_id"):
        return [SubjectInput(kind=FactSubjectKind.USER, id=str(scope["user_id"]))]
    return []


def _persons(fact: Fact, subjects: Iterable[SubjectInput]) -> list[SubjectRef]:
    """The persons a write of `fact` is about (`kindmem.subjects.persons_of`)."""
    return persons_of(
        participant_id=fact.participant_id,
        user_id=fact.user_id,
        thread_id=fact.thread_id,
        subjects=[SubjectRef.parse(s.kind, s.id) for s in subjects],
    )


@dataclass(frozen=True)
class Embedded:
    """What the write path got for a revision's search text: a vector of `model`, or none yet
    (`state` pending: it took too long; failed: the embedder erred; none: no embedder)."""

    state: str
    vector: list[float] | None = None
    model: str | None = None

    @property
    def needs_task(self) -> bool:
        return self.state in (EmbeddingState.PENDING, EmbeddingState.FAILED)


# Embedding in the write path runs on a thread so that the write can stop waiting after its
# budget; a provider that hangs ties up these threads, never the request (or its locks).
# One pool per process, made on first use: a pool's threads do not survive a fork (gunicorn's
# and Celery's workers are forked), and a copied pool would believe it still had them.
_embed_pool: tuple[int, ThreadPoolExecutor] | None = None
_embed_pool_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _embed_pool
    with _embed_pool_lock:
        if _embed_pool is None or _embed_pool[0] != os.getpid():
            _embed_pool = (
                os.getpid(),
                ThreadPoolExecutor(max_workers=2, thread_name_prefix="kindmem-embed-on-write"),
            )
        return _embed_pool[1]


def embed_for_write(text: str) -> Embedded:
    """Embed `text` within `settings.EMBED_BUDGET_MS`. Call it before taking any row lock:
    whatever happens (slow, down, misconfigured), it answers within the budget and never
    raises, so a write never fails or waits long because of embedding."""
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable:
        logger.warning("the configured embedder cannot be built; the revision waits unembedded")
        return Embedded(EmbeddingState.FAILED)
    if embedder is None:
        return Embedded(EmbeddingState.NONE)
    budget = settings.EMBED_BUDGET_MS / 1000
    if budget <= 0:
        return Embedded(EmbeddingState.PENDING)
    future = _pool().submit(embedder.embed, [text])
    try:
        [vector] = future.result(timeout=budget)
    except FutureTimeout:
        future.cancel()  # if it has not started; a running call finishes and is dropped
        return Embedded(EmbeddingState.PENDING)
    except Exception:  # any provider failure leaves the revision for the task, never a 500
        logger.warning("embedding on write failed; embed_revisions will retry", exc_info=True)
        return Embedded(EmbeddingState.FAILED)
    return Embedded(EmbeddingState.DONE, vector=vector, model=embedder.model)


def _embedded_copy(revision: Revision) -> Embedded:
    """A new revision of the same text reuses the vector. Without one it waits for the task:
    the caller holds the fact's row lock, and no lock waits on the network."""
    if revision.embedding is not None and revision.embedding_model:
        return Embedded(
            EmbeddingState.DONE, vector=list(revision.embedding), model=revision.embedding_model
        )
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable:
        return Embedded(EmbeddingState.FAILED)
    return Embedded(EmbeddingState.NONE if embedder is None else EmbeddingState.PENDING)


def _write_revision(
    *,
    fact: Fact,
    version: int,
    content: Any,
    who: _Attribution,
    subjects: Sequence[SubjectInput],
    retention: tuple[int | None, datetime | None, bool],
    valid_from: datetime | None,
    valid_until: datetime | None,
    observed_at: datetime | None,
    source: Any,
    caused_by_log_id: Sequence[str],
    supersedes: Revision | None = None,
    trust: str | None = None,
    verified_by: str | None = None,
    verified_at: datetime | None = None,
    expires_at: datetime | bool | None = False,
    generated_by_step_id: str | None = None,
    generated_by_tool_call_id: str | None = None,
    review: str | None = None,
    embedded: Embedded,
    now: datetime,
) -> Revision:
    keep_days, keep_until, legal_hold = retention
    if expires_at is False:
        expires_at = _expires_at(
            first_write=fact.created_at,
            keep_days=keep_days,
            keep_until=keep_until,
            legal_hold=legal_hold,
        )
    revision = Revision.objects.create(
        tenant_id=fact.tenant_id,
        fact=fact,
        version=version,
        content=content,
        content_hash=content_hash(content, valid_from, valid_until),
        trust=trust or who.trust,
        verified_by=verified_by,
        verified_at=verified_at,
        attributed_kind=who.kind,
        attributed_id=who.id,
        attributed_agent_version=who.agent_version,
        generated_by_run_id=who.run_id,
        generated_by_step_id=generated_by_step_id,
        generated_by_tool_call_id=generated_by_tool_call_id,
        valid_from=valid_from,
        valid_until=valid_until,
        observed_at=observed_at,
        created_at=now,
        keep_days=keep_days,
        keep_until=keep_until,
        legal_hold=legal_hold,
        expires_at=expires_at,
        source=source,
        caused_by_log_id=list(caused_by_log_id),
        supersedes=supersedes,
        review=review,
        search_text=search_text_of(content),
        embedding=embedded.vector,
        embedding_model=embedded.model,
        embedding_state=embedded.state,
    )
    if embedded.needs_task:
        from facts.tasks import embed_revisions  # here: tasks imports this module

        revision_id, tenant = str(revision.pk), str(fact.tenant_id)
        transaction.on_commit(lambda: embed_revisions.delay([revision_id], tenant_id=tenant))
    Subject.objects.bulk_create(
        [
            Subject(
                tenant_id=fact.tenant_id,
                revision=revision,
                fact=fact,
                kind=s.kind,
                subject_id=s.id,
            )
            for s in {(s.kind, s.id): s for s in subjects}.values()
        ]
    )
    return revision


def _is_wide(fact: Fact) -> bool:
    """Whether a fact reaches beyond one person or conversation: it names no participant, user
    or thread (project-, org- or tenant-wide). The seed's `wide-scope`, for any route."""
    return not (fact.participant_id or fact.user_id or fact.thread_id)


def _agent_review(
    principal: Principal, fact: Fact, content: Any
) -> tuple[list[str], list[Finding]]:
    """Why an agent's write must wait for a person: remember's review rules, whatever the route.
    `wide-scope` for a fact beyond one person or conversation; `instruction-like` and
    `hidden-characters` from the content as a reviewer reads it (`review_text`), its slot key
    and its tags. Nothing for any other writer (a person or an app asserts what it writes)."""
    run = principal.run
    if principal.kind != "run" or run is None:
        return [], []
    tools = [t for t in run.agent.tools if isinstance(t, str)]
    findings = detect(review_text(content), tool_names=tools)
    # The key and tags are read beside the content; they fire a reason, with no span to mark.
    labels = detect("\n".join([fact.key or "", *fact.tags]), tool_names=tools)
    return reasons_of([*findings, *labels], wide_scope=_is_wide(fact)), findings


def _check_run_may_alter(
    principal: Principal, fact: Fact, current: Revision, *, deleting: bool = False
) -> None:
    """A run never alters a verified fact (a person checked it) nor another agent's fact (its
    slot), and deletes only facts about its own end user, user or conversation: a deletion
    cannot wait for review, and a wider fact is read by every other end user. `forbidden`,
    changing nothing."""
    run = principal.run
    if principal.kind != "run" or run is None:
        return
    if current.trust == Trust.VERIFIED:
        raise Forbidden("A verified fact is changed by a person, never by an agent's run.")
    others = (
        Revision.objects.of_tenant(fact.tenant_id)
        .approved()
        .filter(fact=fact, attributed_kind=AttributionKind.AGENT)
        .exclude(attributed_id=run.agent.agent_id)
    )
    if others.exists():
        raise Forbidden("This fact is another agent's; a run changes only its own agent's facts.")
    if deleting and _is_wide(fact):
        raise Forbidden(
            "A run deletes only facts about its own end user, user or conversation; this one is "
            "read beyond them."
        )


def _check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    if valid_from and valid_until and valid_from >= valid_until:
        raise InvalidFact(details={"valid_until": ["Must be after valid_from."]})


@transaction.atomic
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
    trust: str | None = None,
    review: str | None = None,
    step_id: str | None = None,
    tool_call_id: str | None = None,
) -> WriteResult:
    """Write a new fact (version 1, trust `asserted`, attributed to the principal; an agent's
    run writes `unverified`, and a fact of its that must wait for review (`_agent_review`:
    wide-scope, instruction-like, hidden-characters) is written `review: pending` with an
    approval, like `remember`).

    `trust`, `review` and the run step (`step_id`, `tool_call_id`) are for the agent-memory
    write path (`remember`: `unverified`, maybe `pending`); the API never passes them.

    A current fact of the same type, scope and slot whose content and validity hash equally is
    returned unchanged (the 003 seed's content dedup): writing the same thing twice is one fact.
    When the write brings something the fact lacks (a retention field, tags, subjects, a source),
    that fact's next revision applies it (`fact_supersede`, outcome `superseded`).
    Refused with `erasure-in-progress` for a held person, and with `forbidden` for a scope the
    writer could not read; in both cases nothing is written.
    """
    tenant_id = principal.tenant_id
    resolved = _resolve_scope(tenant_id, scope or {})
    _check_validity(valid_from, valid_until)
    given_subjects = list(subjects) if subjects is not None else None
    subjects = given_subjects if given_subjects is not None else _default_subjects(resolved)
    fact = Fact(
        tenant_id=tenant_id,
        type=type,
        org_id=resolved["org_id"],
        project_id=resolved["project_id"],
        user_id=resolved["user_id"],
        participant_id=resolved["participant_id"],
        thread_id=resolved["thread_id"],
        session_id=resolved["session_id"],
        key=key,
        tags=sorted(set(tags)),
    )
    assert_not_held(tenant_id, _persons(fact, subjects))
    if fact.thread_id:
        thread_check_fact(
            tenant_id=tenant_id,
            thread_id=fact.thread_id,
            project_id=fact.project_id,
            participant_id=fact.participant_id,
            user_id=fact.user_id,
        )

    hash_ = content_hash(content, valid_from, valid_until)
    same = {f"fact__{k}": v for k, v in resolved.items()}
    readers = readers_for(principal)
    policy = WritePolicy.objects.filter(tenant_id=tenant_id, fact_type=type).first()
    cap = policy.max_records if policy and policy.policy == WritePolicyKind.CAP_CULL else None
    capped = cap is not None
    # Last-write-wins types dedup scope-wide by content; a bounded ring dedups per entity
    # only (the 003 seed): two equal turns of a conversation are two records.
    existing = (
        None
        if capped
        else (
            Revision.objects.of_tenant(tenant_id)
            .live()
            .filter(fact__type=type, fact__key=key, content_hash=hash_, **same)
            .readable_by(readers)
            .select_related("fact")
            .first()
        )
    )
    if existing is not None:
        if not _adds_to(
            existing, subjects=given_subjects, retention=retention, source=source, tags=tags
        ):
            return WriteResult(existing, "unchanged")
        # The same content with something new about it (a legal hold, tags, subjects, a
        # source): never dropped. Revisions are immutable, so it is the fact's next revision.
        return fact_supersede(
            principal=principal,
            fact_id=existing.fact_id,
            content=content,
            subjects=given_subjects,
            valid_from=valid_from,
            valid_until=valid_until,
            observed_at=observed_at,
            retention=retention,
            source=source,
            caused_by_log_id=caused_by_log_id,
            tags=tags,
        )

    embedded = embed_for_write(search_text_of(content))  # before this write takes any lock
    now = timezone.now()
    fact.created_at = now
    fact.save(force_insert=True)
    # The writer may only write where it could read: the same SQL guard as every read.
    if not Fact.objects.filter(pk=fact.pk).readable_by(readers).exists():
        raise Forbidden(
            "This credential may not write into that scope.", details={"scope": resolved}
        )
    reasons, findings = _agent_review(principal, fact, content)
    revision = _write_revision(
        fact=fact,
        version=1,
        content=content,
        who=_attribution(principal),
        subjects=subjects,
        retention=_retention(tenant_id, type, retention),
        valid_from=valid_from,
        valid_until=valid_until,
        observed_at=observed_at,
        source=source,
        caused_by_log_id=caused_by_log_id,
        trust=trust,
        review=Review.PENDING if reasons else review,
        generated_by_step_id=step_id,
        generated_by_tool_call_id=tool_call_id,
        embedded=embedded,
        now=now,
    )
    if cap is not None:
        _cap_cull(fact, cap, by=f"policy:{WritePolicyKind.CAP_CULL.value}", now=now)
    return _queued(principal, WriteResult(revision, "created"), reasons, findings)


def _queued(
    principal: Principal, result: WriteResult, reasons: list[str], findings: list[Finding]
) -> WriteResult:
    """The write's result, its revision queued for review when it must wait."""
    if not reasons:
        return result
    approval_id = review_open(
        principal=principal, revision=result.revision, reasons=reasons, findings=findings
    )
    return WriteResult(result.revision, result.outcome, reasons=reasons, approval_id=approval_id)


def _cap_cull(fact: Fact, max_records: int, *, by: str, now: datetime) -> list[Revision]:
    """Evict the oldest live facts of `fact`'s type and exact scope past `max_records`
    (invalidated `deleted`). A fact whose retention forbids deleting it is kept and still
    counts. Rows are locked in primary-key order so that concurrent writers do not deadlock."""
    same = {f"fact__{c}": getattr(fact, c) for c in SCOPE_COLUMNS}
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
    evicted = []
    for revision in sorted(cohort, key=lambda r: (r.fact.created_at, r.fact_id)):
        if len(evicted) == excess:
            break
        if revision.fact_id == fact.id or retention_forbids_delete(revision, revision.fact, now):
            continue
        _invalidate(revision, by=by, reason=InvalidationReason.DELETED, now=now)
        evicted.append(revision)
    return evicted


def _lock_current(
    principal: Principal, fact_id: uuid.UUID | str, readers: Readers | None = None
) -> tuple[Fact, Revision]:
    """The fact, row-locked, and its current readable revision; `fact-not-found` when the
    caller may not read it (indistinguishable from a missing fact). Concurrent writers of one
    fact queue on the lock, so each sees the revision the one before it wrote."""
    readers = readers or readers_for(principal)
    try:
        ident = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    fact = (
        Fact.objects.select_for_update()
        .of_tenant(principal.tenant_id)
        .filter(pk=ident)
        .readable_by(readers)
        .first()
    )
    if fact is None:
        raise FactNotFound()
    current = (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .filter(fact=fact)
        .prefetch_related("subjects")
        .first()
    )
    if current is None:
        raise FactNotFound()
    return fact, current


def _check_expected(current: Revision, expected_version: int | None) -> None:
    if expected_version is not None and current.version != expected_version:
        raise Conflict(
            "The fact changed since that version was read.",
            details={"expected_version": expected_version, "current_version": current.version},
        )


def _invalidate(revision: Revision, *, by: str, reason: str, now: datetime) -> None:
    changed = Revision.objects.filter(pk=revision.pk, invalidated_at__isnull=True).update(
        invalidated_at=now, invalidated_by=by, invalidation_reason=reason
    )
    if changed != 1:  # the lock makes this unreachable; if it is reached, write nothing
        raise Conflict("Another write replaced this revision first.")
    revision.invalidated_at, revision.invalidated_by = now, by
    revision.invalidation_reason = reason


def _retention_over(
    current: Revision, override: RetentionInput | None
) -> tuple[int | None, datetime | None, bool]:
    """A next revision's retention: the current one's, each field the write names replacing
    it. A field left out is kept: a write that says `keep_days` does not lift a legal hold."""
    return _overridden((current.keep_days, current.keep_until, current.legal_hold), override)


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
    kept = (current.keep_days, current.keep_until, current.legal_hold)
    if retention is not None and _retention_over(current, retention) != kept:
        return True
    if source is not None and source != current.source:
        return True
    return bool(set(tags) - set(current.fact.tags))


def _next_version(fact: Fact) -> int:
    """The fact's next version number. Counted over every revision, not the current one's + 1:
    a successor waiting for review already holds a number. Call it under the fact's row lock."""
    top = Revision.objects.filter(tenant_id=fact.tenant_id, fact=fact).aggregate(Max("version"))
    return (top["version__max"] or 0) + 1


def _subjects_of(revision: Revision) -> list[SubjectInput]:
    return [SubjectInput(kind=s.kind, id=s.subject_id) for s in revision.subjects.all()]


@transaction.atomic
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
    trust: str | None = None,
    review: str | None = None,
    step_id: str | None = None,
    tool_call_id: str | None = None,
    tags: Sequence[str] = (),
) -> WriteResult:
    """Write the fact's next revision (version + 1, `supersedes` the current one, which is
    invalidated `superseded`). With `expected_version`, a fact that moved on is a `conflict`.
    A retention given replaces the current revision's field by field (`_retention_over`);
    `tags` (from a re-posted `fact_create`) are added to the fact's.

    The same content and validity as the current revision changes nothing (`unchanged`),
    unless the write brings other subjects, retention, source or tags (`_adds_to`): then the
    next revision carries the same content with those applied, and keeps its trust (a
    verified content stays verified under a new legal hold) and, when the retention is
    unchanged, its expiry.

    An agent's run may not supersede a verified fact or another agent's (`forbidden`); its new
    value that must wait for review (`_agent_review`) is written `review: pending` beside the
    current revision, which stays current until a reviewer approves the new one."""
    # Embedded before the fact's row lock is taken: no writer queues behind the network.
    embedded = embed_for_write(search_text_of(content))
    fact, current = _lock_current(principal, fact_id)
    _check_run_may_alter(principal, fact, current)
    _check_expected(current, expected_version)
    _check_validity(valid_from, valid_until)
    given_subjects = list(subjects) if subjects is not None else None
    subjects = given_subjects if given_subjects is not None else _subjects_of(current)
    assert_not_held(principal.tenant_id, _persons(fact, subjects))
    same_content = content_hash(content, valid_from, valid_until) == current.content_hash
    if same_content and not _adds_to(
        current, subjects=given_subjects, retention=retention, source=source, tags=tags
    ):
        return WriteResult(current, "unchanged")
    new_tags = sorted(set(tags) - set(fact.tags))
    if new_tags:
        fact.tags = sorted({*fact.tags, *new_tags})
    reasons, findings = _agent_review(principal, fact, content)
    waits = bool(reasons) or review == Review.PENDING
    if waits and new_tags:
        # Tags are the fact's, not a revision's: they cannot wait for a reviewer beside it.
        raise Forbidden(
            "New tags on this fact would be read before its review; write them without them.",
            details={"tags": new_tags},
        )
    if new_tags:
        Fact.objects.filter(pk=fact.pk).update(tags=fact.tags)
    who = _attribution(principal)
    now = timezone.now()
    if not waits:
        by = f"{who.kind}:{who.id}"
        _invalidate(current, by=by, reason=InvalidationReason.SUPERSEDED, now=now)
    kept = (current.keep_days, current.keep_until, current.legal_hold)
    new_retention = _retention_over(current, retention)
    carried: dict[str, Any] = {}
    if same_content:
        # Only what is said about the content changed: the content keeps the trust it had
        # (an agent's write stays unverified), and its expiry unless the retention moved.
        kept_trust = who.trust if principal.kind == "run" else current.trust
        carried = {"trust": trust or kept_trust}
        if carried["trust"] == Trust.VERIFIED:
            carried.update(
                verified_by=current.verified_by,
                verified_at=current.verified_at,
                expires_at=None if new_retention[2] else new_retention[1],
            )
        elif new_retention == kept:
            carried["expires_at"] = current.expires_at
    revision = _write_revision(
        fact=fact,
        version=_next_version(fact),
        content=content,
        who=who,
        subjects=subjects,
        retention=new_retention,
        valid_from=valid_from,
        valid_until=valid_until,
        observed_at=observed_at,
        source=source if source is not None else current.source,
        caused_by_log_id=caused_by_log_id,
        # A value that waits supersedes nothing yet: `revision_approve` links it.
        supersedes=None if waits else current,
        trust=carried.pop("trust", trust),
        review=Review.PENDING if waits else None,
        generated_by_step_id=step_id,
        generated_by_tool_call_id=tool_call_id,
        embedded=embedded,
        now=now,
        **carried,
    )
    return _queued(principal, WriteResult(revision, "superseded"), reasons, findings)


def can_verify(principal: Principal) -> bool:
    """A person with the right: a tenant admin or a Kindgi user; never an app or an agent run."""
    return principal.kind in {"admin", "user"}


@transaction.atomic
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
    fact, current = _lock_current(principal, fact_id, readers)
    _check_expected(current, expected_version)
    subjects = _subjects_of(current)
    assert_not_held(principal.tenant_id, _persons(fact, subjects))
    if current.trust == Trust.VERIFIED:
        return WriteResult(current, "unchanged")
    who = _attribution(principal)
    now = timezone.now()
    _invalidate(current, by=f"{who.kind}:{who.id}", reason=InvalidationReason.SUPERSEDED, now=now)
    revision = _write_revision(
        fact=fact,
        version=_next_version(fact),
        content=current.content,
        who=who,
        subjects=subjects,
        retention=(current.keep_days, current.keep_until, current.legal_hold),
        valid_from=current.valid_from,
        valid_until=current.valid_until,
        observed_at=current.observed_at,
        source=current.source,
        caused_by_log_id=current.caused_by_log_id,
        supersedes=current,
        trust=Trust.VERIFIED,
        verified_by=f"{who.kind}:{who.id}",
        verified_at=now,
        # expires_at left to the retention: the window `remember` set is not carried over
        embedded=_embedded_copy(current),
        now=now,
    )
    return WriteResult(revision, "verified")


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


@transaction.atomic
def fact_delete(*, principal: Principal, fact_id: uuid.UUID | str) -> Revision:
    """Invalidate the current revision (`deleted`): no read returns the fact afterwards, and
    its history stays. Refused with `retention-violation` while a legal hold, a future
    `keep_until` or an unelapsed `keep_days` forbids it, and with `forbidden` for an agent's run
    that may not alter the fact (`_check_run_may_alter`)."""
    fact, current = _lock_current(principal, fact_id)
    _check_run_may_alter(principal, fact, current, deleting=True)
    now = timezone.now()
    reason = retention_forbids_delete(current, fact, now)
    if reason is not None:
        raise RetentionViolation(
            f"Retention forbids deleting this fact ({reason}).", details={"reason": reason}
        )
    who = _attribution(principal)
    _invalidate(current, by=f"{who.kind}:{who.id}", reason=InvalidationReason.DELETED, now=now)
    return current


def _readable_fact_ids(principal: Principal, readers: Readers) -> Any:
    return (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .values("fact_id")
    )


@transaction.atomic
def link_create(
    *,
    principal: Principal,
    source_id: uuid.UUID | str,
    target_id: uuid.UUID | str,
    type: str,
    confidence: float | None = None,
    provenance: Any = None,
    valid_at: datetime | None = None,
    invalid_at: datetime | None = None,
) -> tuple[Link, bool]:
    """Link one readable fact to another (the 003 seed's attributed IEdge). The same
    (source, target, type) again returns the existing link (`False`: nothing written)."""
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidFact(details={"confidence": ["Must be between 0 and 1."]})
    source, _ = _lock_current(principal, source_id)
    readers = readers_for(principal)
    try:
        target_ident = uuid.UUID(str(target_id))
    except ValueError:
        raise FactNotFound(details={"target": str(target_id)}) from None
    if not _readable_fact_ids(principal, readers).filter(fact_id=target_ident).exists():
        raise FactNotFound(
            "No such target fact, or not one this credential may read.",
            details={"target": str(target_id)},
        )
    existing = Link.objects.filter(
        tenant_id=principal.tenant_id, source=source, target_id=target_ident, type=type
    ).first()
    if existing is not None:
        return existing, False
    who = _attribution(principal)
    try:
        with transaction.atomic():
            link = Link.objects.create(
                tenant_id=principal.tenant_id,
                source=source,
                target_id=target_ident,
                type=type,
                confidence=confidence,
                provenance=provenance,
                valid_at=valid_at,
                invalid_at=invalid_at,
                created_by=f"{who.kind}:{who.id}",
            )
    except IntegrityError:  # a concurrent identical link won the unique constraint
        return Link.objects.get(
            tenant_id=principal.tenant_id, source=source, target_id=target_ident, type=type
        ), False
    return link, True


def link_traverse(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    hops: int = 1,
    direction: str = "out",
    type: str | None = None,
) -> list[Reached]:
    """Breadth-first from a readable fact along its links (`out`: to targets, `in`: from
    sources), up to `hops` levels, cycle-safe (a visited fact is never expanded twice), only
    through facts the caller may read: an unreadable fact is neither returned nor crossed.
    One query per level, plus one for the reached revisions. Nearest first."""
    readers = readers_for(principal)
    try:
        seed = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    readable = _readable_fact_ids(principal, readers)
    if not readable.filter(fact_id=seed).exists():
        raise FactNotFound()
    near, far = ("source_id", "target_id") if direction == "out" else ("target_id", "source_id")
    visited = {seed}
    frontier = {seed}
    reached: list[tuple[uuid.UUID, int, Link]] = []
    for level in range(1, min(hops, MAX_HOPS) + 1):
        if not frontier:
            break
        edges = Link.objects.filter(tenant_id=principal.tenant_id, **{f"{near}__in": frontier})
        edges = edges.filter(**{f"{far}__in": readable})
        if type:
            edges = edges.filter(type=type)
        frontier = set()
        for link in edges.order_by("created_at", "id"):
            other = getattr(link, far)
            if other in visited:
                continue
            visited.add(other)
            frontier.add(other)
            reached.append((other, level, link))
    revisions = {
        r.fact_id: r
        for r in Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .filter(fact_id__in=[fid for fid, _, _ in reached])
        .select_related("fact")
        .prefetch_related("subjects")
    }
    return [
        Reached(revision=revisions[fid], hops=level, link=link)
        for fid, level, link in reached
        if fid in revisions
    ]


def revisions_embed(
    *,
    revision_ids: Sequence[uuid.UUID | str],
    embedder: Embedder | None = None,
    top_up_tenant_id: uuid.UUID | str | None = None,
) -> int:
    """Embed those of `revision_ids` that are current and lack a vector of the configured model,
    `EMBED_BATCH` texts per provider call. Safe to run twice and concurrently: a row is written
    only while it still lacks that vector and still holds the text that was embedded. A provider
    failure marks the asked revisions `failed` and raises `EmbeddingFailed` (the task retries).
    Returns how many revisions got a vector.

    With `top_up_tenant_id`, a batch with room left is topped up with that tenant's other
    revisions still waiting (`pending`, oldest first). Each write queues a task for its own
    revision, so under a backlog (an embedder slower than the write budget, or one that was
    down) the first task embeds up to `EMBED_BATCH` writes in one provider call and the later
    tasks find nothing left to do, instead of one call per text. Should the topped-up call
    fail, the asked revisions are tried alone, so that one text the provider refuses never
    holds back the tasks of others."""
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    done = 0
    ids = list(revision_ids)
    for start in range(0, len(ids), EMBED_BATCH):
        pending = list(
            Revision.objects.filter(pk__in=ids[start : start + EMBED_BATCH])
            .unembedded(embedder.model)
            .order_by("pk")
            .values_list("pk", "search_text")
        )
        if not pending:
            continue
        extra: list[tuple[uuid.UUID, str]] = []
        if top_up_tenant_id is not None and len(pending) < EMBED_BATCH:
            extra = list(
                Revision.objects.of_tenant(top_up_tenant_id)
                .waiting_for_embedding()
                .unembedded(embedder.model)
                .exclude(pk__in=[pk for pk, _ in pending])
                .values_list("pk", "search_text")[: EMBED_BATCH - len(pending)]
            )
        try:
            vectors = embedder.embed([text for _, text in pending + extra])
            pending += extra
        except EmbeddingFailed:
            if not extra:
                Revision.objects.filter(pk__in=[pk for pk, _ in pending]).unembedded(
                    embedder.model
                ).update(embedding_state=EmbeddingState.FAILED)
                raise
            done += revisions_embed(revision_ids=[pk for pk, _ in pending], embedder=embedder)
            continue
        with transaction.atomic():
            for (pk, text), vector in zip(pending, vectors, strict=True):
                done += (
                    Revision.objects.filter(pk=pk, search_text=text)
                    .unembedded(embedder.model)
                    .update(
                        embedding=vector,
                        embedding_model=embedder.model,
                        embedding_state=EmbeddingState.DONE,
                    )
                )
    return done
