"""Queries compiled once per shape and run with each call's values: what makes kindmem's hot
reads and writes fast, behind one decorator and a few functions.

Building and compiling a guarded read costs far more than running it: a fact search's query is
7-10 ms of Python to build (the guard's Q objects, the holds' subqueries, BM25's window
expressions) and 5-7 ms to compile, against ~1-2 ms in the database at 10,000 facts (bench/
README.md "Session 10"). Yet its SQL depends only on the *shape* of its inputs (which filters,
how many ids in each list, the LIMIT), never on the values, which are parameters. So a query is
written once, as a plain function that returns a QuerySet, and decorated:

    @compiled()
    def holds_of(tenant_id: uuid.UUID, wanted: tuple[tuple[str, str], ...]) -> QuerySet: ...

    held = holds_of(tenant_id, wanted).all()

Calling it builds nothing: it names a `Read`. The first read of a shape runs the function on
placeholders (`compiled.shapes`), compiles it, and keeps the SQL; every later read
binds its own values into that SQL. The function must therefore let its values choose nothing
but values (a branch on a number, a flag or the size of a list is shape, and fine); a query
that takes a time for itself (`timezone.now()`), or writes a value into its SQL, is found out
and runs through the ORM on every call instead. Where prepared statements are on
(settings.PREPARED_STATEMENTS), each shape runs as one, planned for each call's values
(`compiled.statements`).

Reads and writes that travel together (one round trip):

- `fetch_together(a, b, ...)`: several reads' rows;
- `read_ahead(a, b, ...)`: a block inside which the first `.all()` of each of these reads
  takes its rows from one round trip made on entry: a write reads what it needs up front while
  the code that reads stays as it is;
- `fetch_after(statement, a, ...)`: a statement (a role, a setting), then reads planned after
  it has run;
- `insert(group, ..., then=[reads])`: INSERTs of new instances, then reads that see them;
- `execute(sql, params)`: one statement of fixed text (the audit event's insert).

Only `compiled.orm_internals` reads Django's internals (making rows into models, an
INSERT as `bulk_create` compiles it); its test fails on the Django upgrade that changes them.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec

from django.db import connection, transaction
from django.db.models import Model, QuerySet

from compiled.orm_internals import Empty, compile_insert
from compiled.shapes import Made, Row, Template, forget, identity, template_of
from compiled.statements import preparing, send_prepared

__all__ = [
    "Read",
    "Row",
    "compiled",
    "execute",
    "fetch_after",
    "fetch_together",
    "forget",
    "insert",
    "read_ahead",
]

P = ParamSpec("P")


@dataclass(frozen=True)
class Read:
    """`function(*inputs)`'s rows, its SQL compiled once per shape of `inputs` under `key`.
    `lazy`: its rows come back as `Row`s, made into models when asked; `generic`: as a
    prepared statement it may run on a generic plan (`statements.GENERIC_PLAN`), for a query
    whose plan is the same whatever its values (a lookup by a unique key)."""

    key: Hashable
    function: Callable[..., QuerySet]
    inputs: tuple[Any, ...]
    lazy: bool = False
    generic: bool = False

    def queryset(self, inputs: tuple[Any, ...] | None = None) -> QuerySet:
        """The QuerySet itself (for these inputs, by default the read's own)."""
        return self.function(*(self.inputs if inputs is None else inputs))

    def all(self) -> list[Any]:
        """The rows, as `list(self.queryset())` gives them (`Row`s where lazy)."""
        ahead = _ahead.get()
        if ahead:
            rows = ahead.pop(identity(self.key, self.inputs), None)
            if rows is not None:
                return rows
        [rows] = fetch_together(self)
        return rows

    def first(self) -> Any:
        """The first row, or None (the function orders and slices as `.first()` would)."""
        rows = self.all()
        return rows[0] if rows else None


def compiled(
    *, lazy: bool = False, generic: bool = False
) -> Callable[[Callable[P, QuerySet]], Callable[P, Read]]:
    """Decorate a function that returns a QuerySet of model instances (no `.values()`):
    calling it names a `Read` of that QuerySet, compiled once per shape of its arguments."""

    def decorate(function: Callable[P, QuerySet]) -> Callable[P, Read]:
        key = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def read(*args: P.args, **kwargs: P.kwargs) -> Read:
            assert not kwargs, "a compiled query takes its inputs by position"
            return Read(key, function, args, lazy=lazy, generic=generic)

        return read

    return decorate


# The rows `read_ahead` read, by read, until `Read.all` asks for them (None: no such block).
_ahead: contextvars.ContextVar[dict[Hashable, list[Any]] | None] = contextvars.ContextVar(
    "kindmem_compiled_ahead", default=None
)


@contextmanager
def read_ahead(*reads: Read) -> Iterator[None]:
    """Read `reads` now, all in one round trip (`fetch_together`); inside the block, the first
    `.all()` of each (the same query and inputs) takes its rows from here instead of asking the
    server again. For the independent reads a write makes before it writes anything: the code
    that reads stays as it is, and reads what it would have read a moment later in the same
    transaction. A read this block did not foresee, or one asked twice, runs as usual."""
    wanted = [r for r in reads if not r.lazy and identity(r.key, r.inputs) is not None]
    rows = fetch_together(*wanted) if wanted else []
    token = _ahead.set({identity(r.key, r.inputs): f for r, f in zip(wanted, rows, strict=True)})
    try:
        yield
    finally:
        _ahead.reset(token)


def fetch_together(*reads: Read) -> list[list[Any]]:
    """Each read's rows (as `Read.all` gives them), all sent in one round trip: prepared
    statements in one pipeline, or one message of several statements (`_send`)."""
    return _send(None, reads)[1]


def fetch_after(
    statement: tuple[str, list[Any]], *reads: Read
) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """`statement`'s rows, then each read's rows, in one round trip: the server runs them in
    order, each planned after the one before has run, so what `statement` sets (a role, a
    setting) holds for the reads, as if sent apart."""
    rows, found = _send(statement, reads)
    assert rows is not None
    return rows, found


def execute(sql: str, params: list[Any], *, generic: bool = False) -> list[tuple[Any, ...]]:
    """One statement of fixed text (SQL written out, not compiled from a shape) and its rows,
    as a prepared statement when they are on: for a statement every request sends (the audit
    event's insert). `generic`: as `Read.generic`."""
    if preparing():
        [rows] = send_prepared([(sql, params)], generic=generic)
        return rows
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


_Planned = tuple[Template | Empty | None, list[Any]]


def _made(read: Read, template: Template, rows: list[tuple[Any, ...]]) -> list[Any]:
    return template.rows(rows) if read.lazy else template.models(rows)


def _client_side() -> bool:
    # Django's psycopg cursors bind client-side unless OPTIONS asks for server-side binding
    return connection.settings_dict["OPTIONS"].get("server_side_binding") is not True


def _send(
    first: tuple[str, list[Any]] | None, reads: tuple[Read, ...]
) -> tuple[list[tuple[Any, ...]] | None, list[list[Any]]]:
    """Prepared statements in a pipeline when they are on (and every read is compiled);
    otherwise only Django's default client-side binding sends several statements at once; with
    server-side binding, or when a read is not compiled, they run one by one in a transaction
    (a savepoint-less atomic block, so `first` still holds for them)."""
    planned = [template_of(r.key, r.queryset, r.inputs) for r in reads]
    if preparing() and all(isinstance(t, Template | Empty) for t, _ in planned):
        sent = [(t.sql, t.bound(v)) for t, v in planned if isinstance(t, Template)]
        generic = all(r.generic for r in reads)
        fetched = iter(send_prepared(([first] if first else []) + sent, generic=generic))
        first_rows = next(fetched) if first else None
        found = [
            _made(read, template, next(fetched)) if isinstance(template, Template) else []
            for read, (template, _) in zip(reads, planned, strict=True)
        ]
        return first_rows, found
    if not _client_side() or any(template is None for template, _ in planned):
        return _one_by_one(reads, planned, first)
    statements, params = ([first[0]], list(first[1])) if first else ([], [])
    for template, values in planned:
        if isinstance(template, Template):
            statements.append(template.sql)
            params.extend(template.bound(values))
    if not statements:
        return None, [[] for _ in planned]  # every read is one the ORM answers without SQL
    out: list[list[Any]] = []
    with connection.cursor() as cursor:
        cursor.execute(";\n".join(statements), params)
        first_rows = None
        if first:
            first_rows = cursor.fetchall()
            cursor.nextset()
        for read, (template, _) in zip(reads, planned, strict=True):
            if isinstance(template, Template):
                out.append(_made(read, template, cursor.fetchall()))
                cursor.nextset()
            else:
                out.append([])
    return first_rows, out


def _one_by_one(
    reads: tuple[Read, ...], planned: list[_Planned], first: tuple[str, list[Any]] | None
) -> tuple[list[tuple[Any, ...]] | None, list[list[Any]]]:
    out: list[list[Any]] = []
    first_rows = None
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if first:
            cursor.execute(*first)
            first_rows = cursor.fetchall()
        for read, (template, values) in zip(reads, planned, strict=True):
            if template is None:
                found = list(read.queryset())
                out.append([Made(m) for m in found] if read.lazy else found)
            elif isinstance(template, Template):
                cursor.execute(template.sql, template.bound(values))
                out.append(_made(read, template, cursor.fetchall()))
            else:
                out.append([])
    return first_rows, out


def insert(*groups: Sequence[Model], then: Sequence[Read] = ()) -> list[list[Any]]:
    """INSERT each group of new instances (one model a group, its rows in one statement), in
    order, then read each of `then`: all in one round trip (one message, as `fetch_together`),
    the rows a group's INSERT returns (an auto primary key, a generated column) set on its
    instances as `save(force_insert=True)` and `bulk_create` set them; each read is planned
    after the statements before it have run, so it sees them. Returns each read's rows. With
    prepared statements on, each is one, all in one pipeline.

    No signal is sent: a model with a `pre_save` or `post_save` receiver goes through the ORM,
    as does everything with server-side binding."""
    lists = [list(g) for g in groups if g]
    inserts = [compile_insert(g) for g in lists]
    if not _client_side() or any(i is None for i in inserts):
        for group in lists:  # as the ORM writes them: `save` for one, `bulk_create` for more
            if len(group) == 1:
                group[0].save(force_insert=True)
            else:
                type(group[0])._base_manager.bulk_create(group)
        return [read.all() for read in then]
    written = [i for i in inserts if i is not None]
    planned = [template_of(r.key, r.queryset, r.inputs) for r in then]
    # the reads that are one compiled statement each, sent after the INSERTs
    sent_reads = [(t, values) for t, values in planned if isinstance(t, Template)]
    found: list[list[Any]] = []
    if preparing():
        sent = [(i.sql, i.params) for i in written]
        returning = [i.returns_rows for i in written]
        sent += [(t.sql, t.bound(values)) for t, values in sent_reads]
        returning += [True] * len(sent_reads)
        # INSERTs plan alike whatever their values; the reads say for themselves
        results = send_prepared(sent, returning, generic=all(r.generic for r in then))
        for statement, returned in zip(written, results, strict=False):
            statement.saved(returned)
        found = [
            t.models(rows) for (t, _), rows in zip(sent_reads, results[len(written) :], strict=True)
        ]
    else:
        statements = [i.sql for i in written] + [t.sql for t, _ in sent_reads]
        params = [param for i in written for param in i.params]
        for template, values in sent_reads:
            params.extend(template.bound(values))
        with connection.cursor() as cursor:
            cursor.execute(";\n".join(statements), params)
            for statement in written:
                statement.saved(cursor.fetchall() if statement.returns_rows else [])
                cursor.nextset()
            for template, _ in sent_reads:
                found.append(template.models(cursor.fetchall()))
                cursor.nextset()
    # a read the ORM answers without SQL, or one that is not compiled: read now, after them
    ahead = iter(found)
    return [
        next(ahead) if isinstance(t, Template) else read.all()
        for read, (t, _) in zip(then, planned, strict=True)
    ]
