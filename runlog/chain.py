"""The run log's hash chain: the canonical encoding, and verifying a run's chain.

Every hash is SHA-256, written as 64 lowercase hex digits.

**Canonical JSON** (`canonical_json`): `json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)` encoded as UTF-8: object keys sorted by code point, no
whitespace, non-ASCII characters written as themselves (not `\\uXXXX`), no NaN or Infinity.
A payload is hashed in the form PostgreSQL's `jsonb` gives it back (see
`services.log_append`), so the hash computed at append time is the one a later read
recomputes.

**Hash version 2** (every entry appended now):

- `content_hash = SHA-256(salt || canonical_json(payload))`, where `salt` is 16 fresh random
  bytes per entry, stored as 32 hex digits in `payload_salt` (the hash takes the raw bytes).
- `entry_hash = SHA-256(canonical_json([prev_hash, sequence, kind, content_hash, caused_by,
  created_at]))`: a JSON array of, in this order, the previous entry's `entry_hash` (a
  string), the sequence (an integer), the kind (a string), the content hash (a string), the id
  of the entry that caused this one (its UUID as a lowercase hyphenated string, or `null`), and
  the creation time in UTC as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (always six digits of
  microseconds, always `Z`).

Because the entry hash covers the payload only through `content_hash`, an erasure can clear
`payload` and `payload_salt` and the chain still verifies; with the salt gone, nobody can
confirm a guessed payload against `content_hash`.

**Hash version 1** (entries from before): the same array, but with the payload itself (the
JSON value, not a hash) in place of `content_hash`; `content_hash` is then
`SHA-256(canonical_json(payload))`, unsalted. An erasure clears a v1 payload too (erasure wins),
after which that one entry's hash can no longer be recomputed: verification then checks its
links only, and reports the entry in `unverifiable_sequences`.

**Genesis**: the first entry's `prev_hash` is `GENESIS_HASH`, 64 zeros.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import models

GENESIS_HASH = "0" * 64
SALT_BYTES = 16
HASH_VERSIONS = (1, 2)
CURRENT_HASH_VERSION = 2


class LogKind(models.TextChoices):
    """The fixed vocabulary of log entries (the seed's `LOG_KINDS` names the list but not its
    members; these are the steps of an agent's run that the memory subsystem cares about)."""

    TURN = "turn", "a conversation turn (a message in or out)"
    TOOL_CALL = "tool-call", "the agent called a tool"
    TOOL_RESULT = "tool-result", "a tool answered"
    MEMORY_READ = "memory-read", "the agent read memory (list, search, recall)"
    MEMORY_WRITE = "memory-write", "the agent wrote memory (remember, supersede, delete)"
    DECISION = "decision", "the agent recorded why it chose what it did"
    ERROR = "error", "something failed"
    NOTE = "note", "anything else worth keeping"


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_salt() -> str:
    return secrets.token_hex(SALT_BYTES)


def encode_time(moment: datetime) -> str:
    """UTC, microseconds always present: `2026-11-30T02:44:43.000000Z`."""
    if moment.tzinfo is None:
        raise ValueError("the run log hashes timezone-aware times only")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def content_hash_v2(payload: Any, salt_hex: str) -> str:
    return sha256_hex(bytes.fromhex(salt_hex) + canonical_json(payload))


def content_hash_v1(payload: Any) -> str:
    return sha256_hex(canonical_json(payload))


def _caused_by(caused_by: uuid.UUID | str | None) -> str | None:
    return None if caused_by is None else str(uuid.UUID(str(caused_by)))


def entry_hash_v2(
    *,
    prev_hash: str,
    sequence: int,
    kind: str,
    content_hash: str,
    caused_by: uuid.UUID | str | None,
    created_at: datetime,
) -> str:
    return sha256_hex(
        canonical_json(
            [
                prev_hash,
                sequence,
                kind,
                content_hash,
                _caused_by(caused_by),
                encode_time(created_at),
            ]
        )
    )


def entry_hash_v1(
    *,
    prev_hash: str,
    sequence: int,
    kind: str,
    payload: Any,
    caused_by: uuid.UUID | str | None,
    created_at: datetime,
) -> str:
    return sha256_hex(
        canonical_json(
            [prev_hash, sequence, kind, payload, _caused_by(caused_by), encode_time(created_at)]
        )
    )


@dataclass
class Verification:
    """The result of walking one run's chain from genesis.

    `head` is the last entry's `entry_hash` (genesis for an empty log); `first_bad_sequence` is
    the first position (1-based) where the stored chain differs from the recomputed one.
    """

    ok: bool
    length: int
    head: str
    first_bad_sequence: int | None
    reason: str | None = None
    unverifiable_sequences: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "length": self.length,
            "head": self.head,
            "first_bad_sequence": self.first_bad_sequence,
            "reason": self.reason,
            "unverifiable_sequences": self.unverifiable_sequences,
        }


# The columns verification reads, in this order (a tuple per row keeps a long walk cheap).
VERIFY_COLUMNS = (
    "id",
    "sequence",
    "kind",
    "payload",
    "payload_salt",
    "content_hash",
    "prev_hash",
    "entry_hash",
    "hash_version",
    "payload_erased_at",
    "caused_by_id",
    "created_at",
)


def _row_problem(
    row: tuple[Any, ...], expected_sequence: int, prev: str, prev_version: int, seen: set
) -> str | None:
    """Why this row breaks the chain at `expected_sequence`, or None."""
    (
        _entry_id,
        sequence,
        kind,
        payload,
        salt,
        content_hash,
        prev_hash,
        entry_hash,
        version,
        erased_at,
        caused_by,
        created_at,
    ) = row
    if sequence != expected_sequence:
        return f"expected sequence {expected_sequence}, found {sequence} (a row missing or added)"
    if prev_hash != prev:
        return "prev_hash does not name the previous entry's entry_hash"
    if version in HASH_VERSIONS and version < prev_version:
        # Versions only move forward; without this, relabelling an erased v2 entry as v1
        # (whose erased entries cannot be recomputed) would hide a change to it.
        return "hash_version went back to an older version"
    if kind not in LogKind.values:
        return f"unknown kind {kind!r}"
    if caused_by is not None and caused_by not in seen:
        return "caused_by does not name an earlier entry of this run"
    if version == 2:
        if erased_at is None:
            if payload is None or salt is None:
                return "payload or salt missing on an entry that was not erased"
            try:
                recomputed = content_hash_v2(payload, salt)
            except ValueError:
                return "payload_salt is not hex"
            if recomputed != content_hash:
                return "content_hash does not match payload and salt"
        elif payload is not None or salt is not None:
            return "an erased entry still holds its payload or salt"
        expected = entry_hash_v2(
            prev_hash=prev_hash,
            sequence=sequence,
            kind=kind,
            content_hash=content_hash,
            caused_by=caused_by,
            created_at=created_at,
        )
    elif version == 1:
        if erased_at is not None:
            return None  # cleared by an erasure: links checked, hash not recomputable
        if salt is not None:
            return "a version 1 entry has a salt"
        if content_hash_v1(payload) != content_hash:
            return "content_hash does not match payload"
        expected = entry_hash_v1(
            prev_hash=prev_hash,
            sequence=sequence,
            kind=kind,
            payload=payload,
            caused_by=caused_by,
            created_at=created_at,
        )
    else:
        return f"unknown hash version {version!r}"
    if expected != entry_hash:
        return "entry_hash does not match the entry"
    return None


def verify_rows(rows: Any) -> Verification:
    """Verify rows (tuples in `VERIFY_COLUMNS` order) given in sequence order."""
    prev = GENESIS_HASH
    prev_version = 1
    seen: set = set()
    length = 0
    first_bad: int | None = None
    reason: str | None = None
    unverifiable: list[int] = []
    for row in rows:
        length += 1
        if first_bad is None:
            problem = _row_problem(row, length, prev, prev_version, seen)
            if problem is not None:
                first_bad, reason = length, problem
            elif row[8] == 1 and row[9] is not None:
                unverifiable.append(row[1])
        seen.add(row[0])
        prev, prev_version = row[7], row[8]
    return Verification(
        ok=first_bad is None,
        length=length,
        head=prev,
        first_bad_sequence=first_bad,
        reason=reason,
        unverifiable_sequences=unverifiable,
    )
