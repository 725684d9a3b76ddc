"""Writes to the run log: append an entry, erase payloads."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from api.errors import Forbidden, NotFound, ValidationFailed
from kindmem.access import Principal, PrincipalKind, Readers, readers_for
from kindmem.guards import run_guard
from kindmem.holds import assert_not_held, held_condition
from kindmem.models import Run
from kindmem.subjects import persons_of
from runlog import chain
from runlog.models import LogEntry, LogKind


def run_appendable_q(principal: Principal) -> Q:
    """Which runs a credential may append to: a run token its own run only; an API key the
    runs it may read (the same guard as reading: a Kindgi user's key never writes into an end
    user's run, as it never reads one)."""
    if principal.kind == PrincipalKind.RUN:
        assert principal.run is not None
        return Q(pk=principal.run.pk)
    return run_guard(readers_for(principal))


def run_for_reading(
    *, principal: Principal, run_id: uuid.UUID, readers: Readers | None = None
) -> Run:
    """The run, if the credential's readers cover it; otherwise `not-found` (never `forbidden`:
    a run one cannot read does not exist for them)."""
    run = (
        Run.objects.filter(tenant_id=principal.tenant_id, pk=run_id)
        .filter(run_guard(readers if readers is not None else readers_for(principal)))
        .exclude(held_condition())  # a held person's run reads as nothing
        .first()
    )
    if run is None:
        raise NotFound("No such run, or not one this credential may read.")
    return run


def run_for_appending(*, principal: Principal, run_id: uuid.UUID) -> Run:
    """The run, if the credential may append to it (`run_appendable_q`); `forbidden` if it may
    only read it, `not-found` if it may not even read it."""
    run = (
        Run.objects.filter(tenant_id=principal.tenant_id, pk=run_id)
        .filter(run_appendable_q(principal))
        .first()
    )
    if run is not None:
        return run
    run_for_reading(principal=principal, run_id=run_id)  # raises not-found if unreadable
    raise Forbidden("This credential may not append to that run's log.")


# Deeper payloads are refused: no agent step needs more, and encoders recurse per level.
MAX_PAYLOAD_DEPTH = 32


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "The payload may not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON text may escape one
        return "The payload's text must be valid Unicode (no lone surrogates)."
    return None


def payload_problem(payload: Any) -> tuple[str, str] | None:
    """Why a JSON value cannot be a payload, as (message, path), or None. Walks iteratively
    (a hostile payload may be deeper than Python's recursion limit). Refused: more than
    `MAX_PAYLOAD_DEPTH` levels, keys that are not strings, NUL characters and lone surrogates
    (PostgreSQL text refuses them, UTF-8 cannot encode the latter), non-finite numbers (JSON
    has none)."""
    stack: list[tuple[Any, str, int]] = [(payload, "payload", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_PAYLOAD_DEPTH:
                return f"The payload nests deeper than {MAX_PAYLOAD_DEPTH} levels.", path
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        return "The payload's keys must be strings.", path
                    text_problem = _text_problem(key)
                    if text_problem is not None:
                        return text_problem, path
                    stack.append((item, f"{path}.{key}", depth + 1))
            else:
                stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            text_problem = _text_problem(value)
            if text_problem is not None:
                return text_problem, path
        elif isinstance(value, float):
            if not math.isfinite(value):
                return "The payload's numbers must be finite.", path
        elif value is not None and not isinstance(value, int):  # bool is an int
            return "The payload may hold only JSON values.", path
    return None


def _contains_float(payload: Any) -> bool:
    stack = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _stored_form(payload: dict[str, Any]) -> tuple[Any, int]:
    """The payload as PostgreSQL's jsonb will give it back, decoded the way the model field
    decodes it, and its size in bytes of canonical JSON.

    The content hash is computed over this form, so that verifying later, from what the table
    returns, recomputes the same hash. Only numbers with a fraction or exponent change on the
    way (jsonb keeps them as `numeric`: 1e20 comes back as 100000000000000000000, -0.0 as 0.0),
    so only a payload holding a float pays for asking the database; strings, integers, booleans
    and nulls come back as they went in, and a Python dict has sorted-able, unique keys.
    """
    if not _contains_float(payload):
        return payload, len(chain.canonical_json(payload))
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [text])
        (stored_text,) = cursor.fetchone()
    stored = json.loads(stored_text)
    return stored, len(chain.canonical_json(stored))


def _validate(kind: str, payload: Any) -> None:
    if kind not in LogKind.values:
        raise ValidationFailed(
            f"Unknown log kind {kind!r}.", details={"kind": kind, "allowed": LogKind.values}
        )
    if not isinstance(payload, dict):
        raise ValidationFailed("The payload must be a JSON object.")
    problem = payload_problem(payload)
    if problem is not None:
        raise ValidationFailed(problem[0], details={"path": problem[1]})


@transaction.atomic
def log_append(
    *,
    principal: Principal,
    run: Run,
    kind: str,
    payload: dict[str, Any],
    caused_by_log_id: uuid.UUID | None = None,
) -> LogEntry:
    """Append one entry (hash version 2) to `run`'s log and return it.

    The caller has already checked that `principal` may append to `run` (`run_appendable_q`).
    The run's row is locked (`SELECT ... FOR UPDATE`) for the transaction, so appends to one
    run serialize: each reads the last entry and writes the next sequence and prev_hash with
    nobody in between. The unique constraints (run, sequence) and (run, prev_hash) are the
    backstop. Refused with `validation-error` (nothing written): an unknown kind, a payload
    that is not a JSON object or larger than `RUNLOG_MAX_PAYLOAD_BYTES` of canonical JSON, a
    cause that is not an entry of this run. Refused with `erasure-in-progress`: a run whose
    participant, user or thread an erasure holds.
    """
    _validate(kind, payload)
    # Before the lock: nothing here depends on the chain, so the lock is held for less.
    stored, size = _stored_form(payload)
    if size > settings.RUNLOG_MAX_PAYLOAD_BYTES:
        raise ValidationFailed(
            f"The payload is larger than {settings.RUNLOG_MAX_PAYLOAD_BYTES} bytes of "
            "canonical JSON.",
            details={"limit_bytes": settings.RUNLOG_MAX_PAYLOAD_BYTES, "size_bytes": size},
        )
    locked = (
        Run.objects.select_for_update().filter(tenant_id=principal.tenant_id, pk=run.pk).first()
    )
    if locked is None:
        raise NotFound("No such run in this tenant.")
    assert_not_held(
        locked.tenant_id,
        persons_of(
            participant_id=locked.participant_id,
            user_id=locked.user_id,
            thread_id=locked.thread_id,
        ),
    )
    if caused_by_log_id is not None and not (
        LogEntry.objects.of_run(locked).filter(pk=caused_by_log_id).exists()
    ):
        raise ValidationFailed(
            "caused_by_log_id must name an earlier entry of the same run.",
            details={"caused_by_log_id": str(caused_by_log_id)},
        )
    last = (
        LogEntry.objects.of_run(locked)
        .order_by("-sequence")
        .values_list("sequence", "entry_hash")
        .first()
    )
    sequence, prev_hash = (last[0] + 1, last[1]) if last else (1, chain.GENESIS_HASH)
    salt = chain.new_salt()
    content_hash = chain.content_hash_v2(stored, salt)
    created_at = timezone.now()
    entry_hash = chain.entry_hash_v2(
        prev_hash=prev_hash,
        sequence=sequence,
        kind=kind,
        content_hash=content_hash,
        caused_by=caused_by_log_id,
        created_at=created_at,
    )
    return LogEntry.objects.create(
        tenant_id=locked.tenant_id,
        run=locked,
        sequence=sequence,
        kind=kind,
        payload=stored,
        content_hash=content_hash,
        payload_salt=salt,
        prev_hash=prev_hash,
        entry_hash=entry_hash,
        hash_version=chain.CURRENT_HASH_VERSION,
        caused_by_id=caused_by_log_id,
        created_at=created_at,
    )


@transaction.atomic
def log_payloads_erase(*, tenant_id: uuid.UUID, run_ids: Iterable[uuid.UUID | str]) -> int:
    """Clear the payload and salt of every entry of `run_ids` (the privacy app's erasure calls
    it) and return how many entries it cleared.

    `content_hash`, `entry_hash` and everything else stay, so the chain still verifies, and with
    the salt gone nobody can confirm a guessed payload against `content_hash`. Idempotent: an
    entry already erased is left as it is (its `payload_erased_at` keeps the first erasure's
    time), so a resumed erasure clears only what is left.
    """
    ids = [str(i) for i in run_ids]
    if not ids:
        return 0
    return LogEntry.objects.filter(
        tenant_id=tenant_id, run_id__in=ids, payload_erased_at__isnull=True
    ).update(payload=None, payload_salt=None, payload_erased_at=timezone.now())
