"""Writing the audit stream: one event per request, in the request's transaction."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import F, Func, Q, TextField, Value
from django.db.models.functions import Cast, Now
from django.utils import timezone

import compiled
from audit.models import MAX_ERROR, AuditEvent, AuditPolicy, Outcome
from kindmem.access import Principal
from kindmem.models import Tenant
from kindmem.subjects import Subject

DEFAULT_POLICY = AuditPolicy(retention_days=365, record_query_text=False)


# A target: a fact type (None when not known) and a scope as sorted (key, value) pairs.
Target = tuple[str | None, tuple[tuple[str, str], ...]]


def _target(type_: str | None, scope: Mapping[str, object]) -> Target:
    pairs = ((k, str(v)) for k, v in scope.items() if v is not None and v != "")
    return (type_ or None, tuple(sorted(pairs)))


@dataclass
class AuditNote:
    """What one request touched; a view fills it while it works (`self.audit`)."""

    phase: str
    kind: str
    object_ids: list[str] = field(default_factory=list)
    subjects: set[str] = field(default_factory=set)
    project_id: str | uuid.UUID | None = None
    query_snapshot: dict[str, Any] = field(default_factory=dict)
    # (type, scope) pairs, each once, in the order first touched; and the one asked for, which
    # stands in when nothing was touched (a refused write, a search that found nothing)
    targets: dict[Target, None] = field(default_factory=dict)
    asked: Target | None = None

    def touch(
        self,
        *,
        ids: Iterable[object] = (),
        subjects: Iterable[tuple[str, str] | str] = (),
        targets: Iterable[tuple[str | None, Mapping[str, object]]] = (),
    ) -> None:
        """Note rows touched: their ids, whom they are about, and (facts) each one's type and
        scope, `(fact.type, fact.scope)`."""
        self.object_ids.extend(str(i)[:100] for i in ids)  # a garbage id from a URL stays short
        for subject in subjects:
            self.subjects.add(subject if isinstance(subject, str) else f"{subject[0]}:{subject[1]}")
        for type_, scope in targets:
            self.targets[_target(type_, scope)] = None

    def ask(self, *, type: str | None, scope: Mapping[str, object]) -> None:
        """Note the fact type and scope a call asks for (a write's, a list's or a search's
        filters), recorded only if it touches none."""
        asked = _target(type, scope)
        self.asked = asked if asked != (None, ()) else None

    def target_list(self) -> list[dict[str, Any]]:
        """The event's `targets` column: what was touched, else what was asked for."""
        chosen = list(self.targets) or ([self.asked] if self.asked is not None else [])
        return [{"type": type_, "scope": dict(scope)} for type_, scope in chosen]


@dataclass(frozen=True)
class Actor:
    """Who did something that is not an API call, for the audit stream: an API principal, or a
    staff member in the console (`kind` "console", `id` "staff:<user id>"). It stands where
    `audit_record` takes a principal."""

    kind: str
    id: str
    tenant_id: uuid.UUID
    run: None = None

    @classmethod
    def of_principal(cls, principal: Principal) -> Actor:
        return cls(kind=principal.kind, id=principal.id, tenant_id=principal.tenant_id)

    @classmethod
    def of_staff(cls, user: Any, tenant_id: uuid.UUID) -> Actor:
        return cls(kind="console", id=f"staff:{user.pk}", tenant_id=tenant_id)


def _tenant_lock_key(tenant_id: uuid.UUID) -> int:
    return int.from_bytes(tenant_id.bytes[:8], "big", signed=True)


def audit_record(
    *,
    principal: Principal | Actor,
    note: AuditNote,
    outcome: str,
    endpoint: str,
    error_code: str = "",
    error: str = "",
    durable: bool = True,
) -> AuditEvent:
    """Append one event. Call it inside the transaction of the work it records. A failure's
    `error` is its message, as the caller was told it.

    `durable=False` (the API's successful reads, whose transaction writes nothing else) commits
    without waiting for the WAL flush.

    The per-tenant advisory lock, held until commit, makes a tenant's `seq` order its commit
    order: a reader paging by `since_seq` cannot pass an event that has not committed yet.
    """
    run = principal.run
    event = AuditEvent(
        tenant_id=principal.tenant_id,
        timestamp=timezone.now(),
        phase=note.phase,
        outcome=outcome,
        error_code=error_code,
        error=error[:MAX_ERROR],
        kind=note.kind,
        endpoint=endpoint[:100],
        principal=principal.id,
        principal_kind=principal.kind,
        run_id=run.id if run else None,
        agent_id=run.agent.agent_id if run else "",
        object_ids=list(dict.fromkeys(note.object_ids)),
        subjects=sorted(note.subjects),
        project_id=note.project_id or (run.project_id if run else None),
        query_snapshot=dict(note.query_snapshot),
        targets=note.target_list(),
    )
    columns = [f for f in AuditEvent._meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(getattr(event, f.attname), connection) for f in columns]
    snapshot = next(i for i, f in enumerate(columns) if f.name == "query_snapshot")
    # Inside the caller's transaction no SAVEPOINT round trips; in autocommit the one statement
    # is a transaction of its own, which holds the advisory lock until it commits (as BEGIN and
    # COMMIT around it would, two round trips more).
    # One statement, one round trip: the lock (taken before the insert draws its `seq`,
    # the CTE being read first), the tenant's query-text policy (without it the snapshot
    # keeps no query text), and for a read an asynchronous commit. A read's transaction
    # writes nothing but its audit event, so it need not wait for the WAL flush; a crash
    # of the database server may lose the last fraction of a second of read events (never
    # a write's: a write's event commits with the write, durably). Waiting for that flush
    # on every read cost more than the whole rest of auditing. The same text for every event:
    # a prepared statement (compiled.execute).
    [(event.seq, stored)] = compiled.execute(
        _insert_sql(),
        [
            _tenant_lock_key(principal.tenant_id),
            principal.tenant_id,
            not durable,
            *values[:snapshot],
            values[snapshot],
            values[snapshot],
            *values[snapshot + 1 :],
        ],
        generic=True,  # an INSERT: one plan for every event
    )
    event.query_snapshot = json.loads(stored) if isinstance(stored, str) else stored
    event._state.adding = False
    event._state.db = connection.alias
    return event


_INSERT = (
    "WITH policy AS MATERIALIZED (SELECT pg_advisory_xact_lock(%s)::text AS locked,"
    " (SELECT record_query_text FROM audit_auditpolicy WHERE tenant_id = %s) AS query_text,"
    " CASE WHEN %s THEN set_config('synchronous_commit', 'off', true) END AS asynchronous)"
    " INSERT INTO {table} ({columns}) SELECT {values} FROM policy"
    ' RETURNING "seq", "query_snapshot"'
)
# the snapshot keeps its query text only where the tenant's policy says to record it
_SNAPSHOT = "CASE WHEN policy.query_text THEN %s::jsonb ELSE %s::jsonb - 'query' END"


@cache
def _insert_sql() -> str:
    columns = [f for f in AuditEvent._meta.concrete_fields if not f.primary_key]
    return _INSERT.format(
        table=connection.ops.quote_name(AuditEvent._meta.db_table),
        columns=", ".join(connection.ops.quote_name(str(f.column)) for f in columns),
        values=", ".join(_SNAPSHOT if f.name == "query_snapshot" else "%s" for f in columns),
    )


ERASED_MARK = "erased"


def _scrubbed(value: Any, needle: str) -> Any:
    """`value` (a query snapshot's JSON) with every string that contains `needle` replaced
    by the erased mark, at any depth."""
    if isinstance(value, str):
        return ERASED_MARK if needle in value else value
    if isinstance(value, list):
        return [_scrubbed(v, needle) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, needle) for k, v in value.items()}
    return value


def audit_subject_scrub(*, tenant_id: uuid.UUID, subject: Subject) -> int:
    """After an erasure: drop the person's id and any query text from events about them, and
    the id from every other event's query snapshot (a search by their id, a list filtered by
    it, also during the hold, when nothing came back and the event names no one), keeping
    that each access happened. Returns the number of events changed."""
    spelled = str(subject)
    changed = (
        AuditEvent.objects.of_tenant(tenant_id)
        .about_subject(spelled)
        .update(
            subjects=Func(F("subjects"), Value(spelled), function="array_remove"),
            query_snapshot=Func(F("query_snapshot"), Value("query"), function="", arg_joiner=" - "),
        )
    )
    # The snapshot and the targets (a scope's participant_id, user_id) are JSON, the error
    # text: find the events whose text holds the id (in any spelling, since the bare id is
    # inside the prefixed one), then rewrite each one's values.
    mentioning = list(
        AuditEvent.objects.of_tenant(tenant_id)
        .annotate(
            snapshot_text=Cast("query_snapshot", TextField()),
            targets_text=Cast("targets", TextField()),
        )
        .filter(
            Q(snapshot_text__contains=subject.id)
            | Q(targets_text__contains=subject.id)
            | Q(error__contains=subject.id)
        )
        .only("seq", "query_snapshot", "targets", "error")
        .order_by("seq")
    )
    for event in mentioning:
        event.query_snapshot = _scrubbed(event.query_snapshot, subject.id)
        event.targets = _scrubbed(event.targets, subject.id)
        event.error = _scrubbed(event.error, subject.id)
    AuditEvent.objects.bulk_update(
        mentioning, ["query_snapshot", "targets", "error"], batch_size=500
    )
    # A Kindgi user may be the principal itself ("staff:<id>" in the console).
    acting = (
        AuditEvent.objects.of_tenant(tenant_id)
        .filter(principal__contains=subject.id)
        .update(principal=ERASED_MARK)
    )
    return changed + len(mentioning) + acting


def audit_purge() -> int:
    """Delete events older than each tenant's retention. Returns how many were deleted."""
    deleted = 0
    policies = {p.tenant_id: p.retention_days for p in AuditPolicy.objects.all()}
    for tenant_id in Tenant.objects.values_list("id", flat=True).order_by("id"):
        days = policies.get(tenant_id, DEFAULT_POLICY.retention_days)
        count, _ = (
            AuditEvent.objects.of_tenant(tenant_id)
            .filter(timestamp__lt=Now() - timedelta(days=days))
            .delete()
        )
        deleted += count
    return deleted


__all__ = ["Actor", "AuditNote", "Outcome", "audit_purge", "audit_record", "audit_subject_scrub"]
