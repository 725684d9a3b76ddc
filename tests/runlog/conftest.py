"""Fixtures of the run log's tests: a run with a few entries, v1 entries, SQL tampering."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from runlog import chain, services
from runlog.models import LogEntry
from tests import factories


@pytest.fixture
def minted(world: Any) -> factories.Minted:
    """A run of the world's app, for participant-1 in thread-1."""
    return factories.run_create(world.app, world.project)


def log_entry_append(minted: factories.Minted, kind: str = "turn", **payload: Any) -> LogEntry:
    """One entry on the run's log, through the service (not the API)."""
    return services.log_append(
        principal=minted.principal, run=minted.run, kind=kind, payload=payload or {"n": 1}
    )


@pytest.fixture
def five(minted: factories.Minted) -> list[LogEntry]:
    """Five entries; the third was caused by the second."""
    entries = [log_entry_append(minted, "turn", text="hello, I'm Ada")]
    entries.append(log_entry_append(minted, "tool-call", tool="weather", args={"city": "Zürich"}))
    entries.append(
        services.log_append(
            principal=minted.principal,
            run=minted.run,
            kind="tool-result",
            payload={"temp_c": 7.5},
            caused_by_log_id=entries[1].id,
        )
    )
    entries.append(log_entry_append(minted, "memory-write", key="name", value="Ada"))
    entries.append(log_entry_append(minted, "turn", text="bye"))
    return entries


def v1_entry_create(
    run: Any,
    *,
    sequence: int,
    prev_hash: str,
    payload: dict[str, Any],
    kind: str = "turn",
    created_at: datetime | None = None,
) -> LogEntry:
    """An entry as version 1 wrote it: the entry hash over the payload itself, no salt."""
    created_at = created_at or timezone.now()
    return LogEntry.objects.create(
        tenant_id=run.tenant_id,
        run=run,
        sequence=sequence,
        kind=kind,
        payload=payload,
        content_hash=chain.content_hash_v1(payload),
        payload_salt=None,
        prev_hash=prev_hash,
        entry_hash=chain.entry_hash_v1(
            prev_hash=prev_hash,
            sequence=sequence,
            kind=kind,
            payload=payload,
            caused_by=None,
            created_at=created_at,
        ),
        hash_version=1,
        created_at=created_at,
    )


def sql(statement: str, params: list[Any] | None = None) -> int:
    """Run raw SQL as a tamperer would, bypassing the app; returns the row count."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])
        return cursor.rowcount
