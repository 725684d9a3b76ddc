"""Statements sent as prepared statements bound server-side, several in one psycopg pipeline
(one round trip), through Django's cursor wrapper; and query vectors in pgvector's binary form.

Only public APIs: a `psycopg.Cursor` that executes with `prepare=True`, `Connection.pipeline()`,
`PGconn.pipeline_status`, psycopg's dumpers, and Django's `make_cursor` / `make_debug_cursor`
(what Django wraps its own cursors in: error translation, execute wrappers, the debug log).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import psycopg
from django.db import connection
from pgvector import Vector
from psycopg.adapt import Dumper
from psycopg.pq import Format, PipelineStatus


class _PreparingCursor(psycopg.Cursor[Any]):
    """A server-side binding cursor (what Django's `server_side_binding` uses), preparing every
    statement it runs: psycopg keeps the prepared statement per connection, by the text of its
    SQL (a compiled shape's SQL is the same text every time), so the server parses, rewrites
    (row security) and plans each shape once per connection, and may then keep a generic plan,
    instead of on every call. A plan follows the role it was made under: PostgreSQL replans a
    statement prepared under row security when the role changes."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return super().execute(query, params, prepare=True, binary=kwargs.get("binary"))


# Every execution of a prepared statement is planned for its values (the session's
# `plan_cache_mode`, config/settings_database.py): a generic plan, made once without them, chose an
# exact scan of 50,000 rows where the values called for the HNSW index (bench/search.py). A pipeline
# of statements whose plan cannot depend on their values (a credential's lookup by its unique
# prefix, an INSERT, a row read back by its primary key) starts with this statement instead, which
# lets PostgreSQL keep a generic plan for them, and ends with the other, which puts the session's
# mode back for what follows in the same transaction (in autocommit the pipeline is one implicit
# transaction): what saves their planning on every request. Neither is a query of the application's:
# they bypass Django's cursor wrapper, and its statement counts.
GENERIC_PLAN: tuple[str, list[Any]] = ("SELECT set_config('plan_cache_mode', 'auto', true)", [])
CUSTOM_PLAN: tuple[str, list[Any]] = (
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)",
    [],
)

# Pipelines this process has opened: statements sent while the same one is open share a round
# trip (tests/round_trips.py counts them so).
_pipelines = itertools.count(1)
_open_pipeline: list[int | None] = [None]


def open_pipeline() -> int | None:
    """The number of the pipeline open on this thread's connection, None outside one."""
    raw = connection.connection
    if raw is None or raw.pgconn.pipeline_status == PipelineStatus.OFF:
        return None
    return _open_pipeline[0]


def preparing() -> bool:
    """Whether prepared statements are on: the connection's psycopg threshold is set
    (settings.PREPARED_STATEMENTS; None turns psycopg's preparing off altogether)."""
    connection.ensure_connection()
    return getattr(connection.connection, "prepare_threshold", None) is not None


def _wrapped(cursor: psycopg.Cursor[Any]) -> Any:
    """The cursor as Django wraps its own (the debug log, execute wrappers, error translation)."""
    connection.validate_thread_sharing()
    # django-stubs type the argument as Django's wrapper; Django passes its driver's cursor
    if connection.queries_logged:
        return connection.make_debug_cursor(cursor)  # type: ignore[arg-type]
    return connection.make_cursor(cursor)  # type: ignore[arg-type]


def send_prepared(
    statements: list[tuple[str, list[Any]]],
    returning: list[bool] | None = None,
    *,
    generic: bool = False,
) -> list[list[tuple[Any, ...]]]:
    """Each statement's rows, run as prepared statements bound server-side, in order; more
    than one in a pipeline (one round trip; the server still plans each after the one before
    has run). Through Django's cursor wrapper, so that its error translation and execute
    wrappers (statement counts, the debug log) see each statement as any other. `returning`
    says which statements have rows to fetch (all, by default; not an INSERT without
    RETURNING). `generic`: they may run on generic plans (`GENERIC_PLAN`)."""
    if not statements:
        return []
    raw = connection.connection
    _binary_vector_params(raw)
    cursors = [_wrapped(_PreparingCursor(raw)) for _ in statements]
    modes = [_PreparingCursor(raw), _PreparingCursor(raw)] if generic else []
    fetched = returning or [True] * len(statements)
    try:
        if len(statements) == 1 and not generic:
            cursors[0].execute(*statements[0])
            return [cursors[0].fetchall() if fetched[0] else []]
        with raw.pipeline():
            _open_pipeline[0] = next(_pipelines)
            if modes:
                modes[0].execute(*GENERIC_PLAN)
            for cursor, statement in zip(cursors, statements, strict=True):
                cursor.execute(*statement)
            if modes:
                modes[1].execute(*CUSTOM_PLAN)
            return [
                cursor.fetchall() if rows else []
                for cursor, rows in zip(cursors, fetched, strict=True)
            ]
    finally:
        _open_pipeline[0] = None
        for cursor in (*cursors, *modes):
            cursor.close()


# A query vector travels in pgvector's binary form when bound server-side (a prepared
# statement): writing 384 floats out as text took ~0.2 ms of every semantic search's Python,
# and the server parsed them back. The binary form needs the `vector` type's OID, read once
# per connection before its first prepared statement (`send_prepared`); until then, and in
# Django's client-side bound statements, a vector is written out as text.
_binary_vectors: weakref.WeakSet[Any] = weakref.WeakSet()


class VectorTextDumper(Dumper):
    format = Format.TEXT  # oid 0: the server infers `vector` from where it is used

    def dump(self, obj: Vector) -> bytes:
        return obj.to_text().encode()


class VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        return obj.to_binary()


def register_vector_params(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created`'s receiver: a new connection writes pgvector's `Vector` as a
    parameter (as text, until `_binary_vector_params` knows the type). A pooled connection is
    handed out again and again: one that already sends vectors in binary keeps doing so."""
    raw = connection.connection
    if raw not in _binary_vectors:
        raw.adapters.register_dumper(Vector, VectorTextDumper)


def _binary_vector_params(raw: Any) -> None:
    """From now on, vectors go to the server in binary on this connection, once the database
    has the type (a database not yet migrated is asked again next time)."""
    if raw in _binary_vectors or raw.pgconn.pipeline_status != PipelineStatus.OFF:
        return
    with raw.cursor() as cursor:
        cursor.execute("SELECT to_regtype('vector')::oid")
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return
    # the last dumper registered for a class is the one `%s` uses (psycopg's rule)
    raw.adapters.register_dumper(Vector, type("", (VectorDumper,), {"oid": row[0]}))
    _binary_vectors.add(raw)
