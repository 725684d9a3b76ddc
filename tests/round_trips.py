"""Counting a block's round trips to the database, where statements may travel together."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

from compiled.statements import open_pipeline


@contextmanager
def round_trips() -> Iterator[list[list[str]]]:
    """The statements the block sent, grouped by round trip: the statements of one psycopg
    pipeline (compiled's prepared statements) share one; any other is one of its own
    (a message of several statements is one statement to Django)."""
    trips: list[list[str]] = []
    last: list[Any] = [None]

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        pipeline = open_pipeline()
        if pipeline is not None and pipeline == last[0]:
            trips[-1].append(sql)
        else:
            trips.append([sql])
        last[0] = pipeline
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield trips


def listed(trips: list[list[str]]) -> str:
    return "\n".join(
        f"{i:2}. {' + '.join(sql[:100] for sql in trip)}" for i, trip in enumerate(trips, 1)
    )
