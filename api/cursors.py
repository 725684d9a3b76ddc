"""Keyset cursors: the `(created_at, id)` of the last row of a page, opaque to the client.

One implementation for every list that pages by creation time. A cursor is accepted only if
encoding what it decodes to gives it back exactly: anything else (another timestamp format, a
naive time, an offset that carries the time out of range, a UUID spelled another way, padding
or characters outside base64) was not made here and is refused, so no crafted value reaches
the database, where an out-of-range timestamp failed as a 500.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import UTC, datetime
from typing import Protocol


class Paged(Protocol):
    created_at: datetime
    id: uuid.UUID


def _encode(created_at: datetime, ident: uuid.UUID) -> str:
    raw = f"{created_at.astimezone(UTC).isoformat()}|{ident}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def cursor_encode(row: Paged) -> str:
    """The cursor of the page that follows `row`."""
    return _encode(row.created_at, row.id)


def cursor_decode(value: str) -> tuple[datetime, uuid.UUID]:
    """The `(created_at, id)`, in UTC, of a cursor `cursor_encode` made; ValueError otherwise."""
    try:
        created, ident = base64.urlsafe_b64decode(value.encode("ascii")).decode().split("|")
        parsed = datetime.fromisoformat(created)
        if parsed.tzinfo is None:
            raise ValueError("naive")
        # 0001-01-01T00:00:00+23:59 parses, but is a time before datetime's range
        at = parsed.astimezone(UTC)
        decoded = at, uuid.UUID(ident)
    except (ValueError, OverflowError, binascii.Error) as exc:  # UnicodeError is a ValueError
        raise ValueError("Not a cursor this API returned.") from exc
    if _encode(*decoded) != value:
        raise ValueError("Not a cursor this API returned.")
    return decoded
