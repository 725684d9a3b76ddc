"""Queries compiled once per shape and run with each request's values.

Building and compiling a guarded read costs more than running it: a fact search's queries took
~10 ms of Python (the guard's Q objects, the holds' subqueries, BM25's window expressions, the
compiler) against ~1 ms in the database at 10,000 facts (bench/peers.py). Yet their SQL depends
only on the *shape* of the inputs (which filters, how many ids in each list, the LIMIT), never
on the values, which are parameters. So a query is built by the ordinary ORM code from
placeholders once per shape, compiled, and every later call binds its own values into that SQL.

`fetch(key, build, inputs)` does it. `inputs` is what `build` turns into a QuerySet (readers,
ids, the query's words, a vector, ...). Its shape is `inputs` with every value replaced by a
placeholder: the k-th distinct value becomes the k-th placeholder of its kind, so equal values
stay equal (the guard merges and deduplicates id sets: the structure it builds depends on which
ids are equal, and the placeholders keep exactly that). Strings, UUIDs, datetimes and vectors
are values; numbers, booleans, None, the length of every tuple or set and the keys of every
dict are shape. `key` names the query and anything else its SQL depends on.

Where prepared statements are on (settings.PREPARED_STATEMENTS), the compiled SQL runs as one,
bound server-side: the server parses, rewrites and plans a shape once per connection, which for
a guarded search cost as much as running it; queries fetched together go in one pipeline.

The placeholders are values no caller can send (a random token per process), so finding them
among the compiled parameters is exact, and a query whose SQL holds one inline (not as a
parameter) is refused, not cached: it runs through the ORM every time. The SQL is therefore
the ORM's own for the caller's values, up to the order of the ids inside an IN list.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import secrets
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from pgvector import Vector
from psycopg.adapt import Dumper
from psycopg.pq import Format

logger = logging.getLogger(__name__)

# psycopg keeps its parse of a query's placeholders (client-side binding) only for queries of at
# most 4 KB and 50 parameters, so the larger compiled queries here (one hybrid search: ~9 KB,
# ~150 parameters) are parsed again on each call, ~0.5 ms. Raising those bounds meant patching
# psycopg's private `_queries` module; under ~1 ms a request, the public API is worth more
# (issue 29). With prepared statements on, the server keeps the plan either way.

# Shapes kept per process; a shape is a query and the structure of its inputs (a reader kind,
# the filters given, a hit count), so a few hundred cover every request a process serves.
MAX_SHAPES = 512

_TOKEN = secrets.token_hex(6)
_UUID_BASE = uuid.UUID(int=secrets.randbits(128)).int & ~0xFFFFFFFF  # the low 32 bits: k
# Far in the future: a placeholder for a read's "now" survives `unexpired(at)`'s max(at, now).
_DATETIME_BASE = datetime(2999, 1, 1, tzinfo=UTC)


def _uuid_placeholder(k: int) -> uuid.UUID:
    return uuid.UUID(int=_UUID_BASE | k)


def _text_placeholder(k: int) -> str:
    # lower case, no space, quote or leading '-': one word wherever text is parsed; the final
    # letter keeps the k-th from being a prefix of the (10k)-th
    return f"zqkm{_TOKEN}x{k}q"


def _datetime_placeholder(k: int) -> datetime:
    return _DATETIME_BASE + timedelta(microseconds=k + 1)


def _vector_placeholder(k: int, dimensions: int) -> Vector:
    return Vector([float(k + 2), *([0.0] * (dimensions - 1))])


def _is_canonical_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


class _Walk:
    """From inputs to their shape, keeping the real value behind each placeholder (in
    `values`, the k-th placeholder's at k)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._seen: dict[tuple[str, Any], int] = {}

    def _index(self, kind: str, identity: Any, value: Any) -> int:
        k = self._seen.get((kind, identity))
        if k is None:
            k = self._seen[(kind, identity)] = len(self.values)
            self.values.append(value)
        return k

    def shape(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, uuid.UUID):
            # one placeholder for a UUID and its canonical spelling: the two compare equal
            return _uuid_placeholder(self._index("uuid", str(value), value))
        if isinstance(value, str):
            if _is_canonical_uuid(value):
                return str(_uuid_placeholder(self._index("uuid", value, value)))
            return _text_placeholder(self._index("text", value, value))
        if isinstance(value, datetime):
            return _datetime_placeholder(self._index("datetime", value, value))
        if isinstance(value, Vector):
            k = self._index("vector", id(value), value)
            return _vector_placeholder(k, value.dimensions())
        if isinstance(value, dict):
            return {key: self.shape(value[key]) for key in sorted(value)}
        if isinstance(value, frozenset | set):
            # in sorted order, so that equal sets get the same placeholders
            return frozenset(self.shape(v) for v in sorted(value, key=_sort_key))
        if isinstance(value, tuple | list):
            return type(value)(self.shape(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {
                f.name: self.shape(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.init
            }
            return dataclasses.replace(value, **changes)
        raise TypeError(f"no placeholder for a {type(value).__name__}")


def _sort_key(value: Any) -> tuple[str, str]:
    return (type(value).__name__, str(value))


def _hashable(shape: Any) -> Hashable:
    if isinstance(shape, dict):
        return tuple((k, _hashable(v)) for k, v in shape.items())
    if isinstance(shape, list):
        return tuple(_hashable(v) for v in shape)
    if isinstance(shape, Vector):
        return ("vector", shape.dimensions(), shape.to_list()[0])
    if isinstance(shape, tuple):
        return tuple(_hashable(v) for v in shape)
    if dataclasses.is_dataclass(shape) and not isinstance(shape, type):
        fields = dataclasses.fields(shape)
        return (type(shape), *(_hashable(getattr(shape, f.name)) for f in fields if f.init))
    return shape


def _placeholder_index(values: list[Any]) -> dict[Any, tuple[int, str]]:
    """Every form in which the k-th placeholder may come out of the compiler: (k, form)."""
    index: dict[Any, tuple[int, str]] = {}
    for k, value in enumerate(values):
        if isinstance(value, uuid.UUID) or (isinstance(value, str) and _is_canonical_uuid(value)):
            index[_uuid_placeholder(k)] = (k, "uuid")
            index[str(_uuid_placeholder(k))] = (k, "text")
        elif isinstance(value, str):
            index[_text_placeholder(k)] = (k, "text")
        elif isinstance(value, datetime):
            index[_datetime_placeholder(k)] = (k, "datetime")
        elif isinstance(value, Vector):
            index[_vector_placeholder(k, value.dimensions()).to_text()] = (k, "vector")
    return index


# A compiled parameter, from the caller's values.
_Binder = Callable[[list[Any]], Any]


def _bind_one(k: int, form: str) -> _Binder:
    if form == "uuid":
        return lambda values: uuid.UUID(str(values[k]))
    if form == "vector":
        return lambda values: values[k]
    if form == "datetime":
        return lambda values: values[k]
    return lambda values: str(values[k])


# A query vector travels in pgvector's binary form when bound server-side (a prepared
# statement): writing 384 floats out as text took ~0.2 ms of every semantic search's Python,
# and the server parsed them back. The binary form needs the `vector` type's OID, read once
# per connection before its first prepared statement (`_send_prepared`); until then, and in
# Django's client-side bound statements, a vector is written out as text.
_binary_vectors: weakref.WeakSet[Any] = weakref.WeakSet()


class _VectorTextDumper(Dumper):
    format = Format.TEXT  # oid 0: the server infers `vector` from where it is used

    def dump(self, obj: Vector) -> bytes:
        return obj.to_text().encode()


class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        return obj.to_binary()


def register_vector_params(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created`'s receiver: a new connection writes pgvector's `Vector` as a
    parameter (as text, until `_binary_vector_params` knows the type). A pooled connection is
    handed out again and again: one that already sends vectors in binary keeps doing so."""
    raw = connection.connection
    if raw not in _binary_vectors:
        raw.adapters.register_dumper(Vector, _VectorTextDumper)


def _binary_vector_params(raw: Any) -> None:
    """From now on, vectors go to the server in binary on this connection, once the database
    has the type (a database not yet migrated is asked again next time)."""
    if raw in _binary_vectors or raw._pipeline is not None:
        return
    with raw.cursor() as cursor:
        cursor.execute("SELECT to_regtype('vector')::oid")
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return
    # the last dumper registered for a class is the one `%s` uses (psycopg's rule)
    raw.adapters.register_dumper(Vector, type("", (_VectorDumper,), {"oid": row[0]}))
    _binary_vectors.add(raw)


class _NotReusable(Exception):
    """The compiled query holds something that is not a placeholder's parameter."""


def _binder_for(
    param: Any, index: dict[Any, tuple[int, str]], needles: list[str]
) -> _Binder | None:
    """How to make `param` from the caller's values; None for a constant of the query."""
    if isinstance(param, datetime):
        if param not in index:
            # a time the build took for itself (a `timezone.now()`): reused, it would go stale
            raise _NotReusable("a datetime that is not a placeholder")
        k, form = index[param]
        return _bind_one(k, form)
    if isinstance(param, uuid.UUID | str) and param in index:
        k, form = index[param]
        return _bind_one(k, form)
    if isinstance(param, list | tuple):
        parts = [_binder_for(p, index, needles) for p in param]
        if any(parts):
            kind = type(param)
            fixed = list(param)
            return lambda values: kind(b(values) if b else fixed[i] for i, b in enumerate(parts))
        return None
    if param is None or isinstance(param, bool | int | float | uuid.UUID):
        return None
    # A placeholder inside a parameter made from it (a LIKE pattern, a JSON adapter, ...)
    # cannot be replaced: reused, the query would look for the placeholder.
    text = param if isinstance(param, str) else repr(param)
    if any(needle in text for needle in needles):
        raise _NotReusable("a value inside a parameter built from it")
    return None


@dataclass
class _Template:
    """One shape's SQL, how to bind its parameters, and how to turn its rows into models."""

    sql: str
    params: list[Any]
    binders: list[tuple[int, _Binder]]
    model: type[Model]
    init_list: list[str]
    model_fields: slice
    related_populators: list[Any]
    annotation_col_map: dict[str, int]
    converters: list[tuple[int, tuple[list[Any], Any]]]
    db: str
    pk_position: int

    def bound(self, values: list[Any]) -> list[Any]:
        """The parameters for these values."""
        params = list(self.params)
        for position, bind in self.binders:
            params[position] = bind(values)
        return params

    def models(self, rows: list[tuple[Any, ...]]) -> list[Model]:
        """The rows as `ModelIterable` makes them (select_related and annotations included)."""
        return [self.model_of(row) for row in rows]

    def model_of(self, fetched: tuple[Any, ...]) -> Model:
        row = list(fetched)
        for position, (convs, expression) in self.converters:
            value = row[position]
            for convert in convs:
                value = convert(value, expression, connection)
            row[position] = value
        obj = self.model.from_db(self.db, self.init_list, row[self.model_fields])
        for populator in self.related_populators:
            populator.populate(row, obj)
        for attr, position in self.annotation_col_map.items():
            setattr(obj, attr, row[position])
        return obj

    def rows(self, rows: list[tuple[Any, ...]]) -> list[Row]:
        return [Row(self, row) for row in rows]


class Row:
    """One row of a query, made into its model only when asked: a hybrid search ranks both
    legs' rows by primary key and makes models of the few it returns."""

    __slots__ = ("_model", "_row", "_template")

    def __init__(self, template: _Template, row: tuple[Any, ...]) -> None:
        self._template, self._row = template, row
        self._model: Model | None = None

    @property
    def pk(self) -> Any:
        return self._row[self._template.pk_position]

    def model(self) -> Any:
        if self._model is None:
            self._model = self._template.model_of(self._row)
        return self._model


class _Made:
    """A `Row` the ORM made already (a query that is not reused)."""

    __slots__ = ("_model",)

    def __init__(self, model: Model) -> None:
        self._model = model

    @property
    def pk(self) -> Any:
        return self._model.pk

    def model(self) -> Model:
        return self._model


class _Empty:
    """A shape the ORM answers without a query (an empty IN list it cannot satisfy, none())."""


_templates: OrderedDict[Hashable, _Template | _Empty | None] = OrderedDict()
_lock = threading.Lock()


def _compile(qs: QuerySet, values: list[Any]) -> _Template | _Empty | None:
    """The template of `qs`, built from the placeholders of `values`; None when its SQL
    cannot be reused with other values."""
    compiler = qs.query.get_compiler(using=qs.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return _Empty()
    index = _placeholder_index(values)
    # what a placeholder looks like written out: in the SQL, or inside another parameter
    needles = [p if isinstance(p, str) else repr(p) for p in index if not isinstance(p, uuid.UUID)]
    if any(needle in sql for needle in needles):
        logger.warning("a query holds a value inline, not as a parameter: not reused")
        return None
    try:
        binders = [
            (position, bind)
            for position, param in enumerate(params)
            if (bind := _binder_for(param, index, needles)) is not None
        ]
    except _NotReusable as exc:
        logger.warning("a query is not reused: %s", exc)
        return None
    select, klass_info = compiler.select, compiler.klass_info
    fields = klass_info["select_fields"]
    model_fields = slice(fields[0], fields[-1] + 1)
    converters = compiler.get_converters([s[0] for s in select[0 : compiler.col_count]])
    return _Template(
        sql=sql,
        params=list(params),
        binders=binders,
        model=klass_info["model"],
        init_list=[f[0].target.attname for f in select[model_fields]],
        model_fields=model_fields,
        # django-stubs describe Django 6's signature (a fetch mode); 5.2's takes these three
        related_populators=get_related_populators(klass_info, select, qs.db),  # type: ignore[call-arg]
        annotation_col_map=dict(compiler.annotation_col_map or {}),
        converters=list(converters.items()),
        db=qs.db,
        pk_position=next(
            i for i in range(fields[0], fields[-1] + 1) if select[i][0].target.primary_key
        ),
    )


@dataclass(frozen=True)
class Query:
    """`build(inputs)`, compiled once per shape of `inputs` under `key` (see `fetch`); `lazy`:
    its rows come back as `Row`s, made into models when asked; `generic`: as a prepared
    statement it may run on a generic plan (`GENERIC_PLAN`), for a query whose plan is the same
    whatever its values (a lookup by a unique key)."""

    key: Hashable
    build: Callable[[Any], QuerySet]
    inputs: Any
    lazy: bool = False
    generic: bool = False


def _template(query: Query) -> tuple[_Template | _Empty | None, list[Any]]:
    """The query's template (None: it runs through the ORM) and the values to bind."""
    walk = _Walk()
    try:
        shape = walk.shape(query.inputs)
    except TypeError:  # an input with no placeholder: through the ORM, every time
        logger.warning("a query's inputs have no shape: not reused", exc_info=True)
        return None, []
    cache_key = (query.key, _hashable(shape))
    try:
        template = _templates[cache_key]
    except KeyError:
        try:
            template = _compile(query.build(shape), walk.values)
        except Exception:  # the ORM refused a placeholder: this shape runs through the ORM
            logger.debug("a query shape is not reused", exc_info=True)
            template = None
        with _lock:
            _templates[cache_key] = template
            while len(_templates) > MAX_SHAPES:
                _templates.popitem(last=False)
    return template, walk.values


def fetch(
    key: Hashable, build: Callable[[Any], QuerySet], inputs: Any, *, generic: bool = False
) -> list[Any]:
    """`list(build(inputs))`, its SQL compiled once per shape of `inputs` (the module
    docstring). `key` names the query and whatever else its SQL depends on. `build` makes model
    instances (no `.values()`), and takes any time it filters by from `inputs` (a read's "now"
    too: a time the build took itself would be reused stale, so such a query is never reused).
    `generic`: as `Query.generic`.
    """
    query = Query(key, build, inputs, generic=generic)
    ahead = _ahead.get()
    if ahead:
        rows = ahead.pop(_ahead_key(query), None)
        if rows is not None:
            return rows
    [rows] = fetch_together(query)
    return rows


# The rows `fetched_ahead` read, by query, until `fetch` asks for them (None: no such block).
_ahead: contextvars.ContextVar[dict[Hashable, list[Any]] | None] = contextvars.ContextVar(
    "kindmem_prepared_ahead", default=None
)


def _ahead_key(query: Query) -> Hashable | None:
    walk = _Walk()
    try:
        shape = _hashable(walk.shape(query.inputs))
    except TypeError:
        return None
    values = tuple(v.to_text() if isinstance(v, Vector) else v for v in walk.values)
    return (query.key, shape, values)


@contextmanager
def fetched_ahead(*queries: Query) -> Iterator[None]:
    """Read `queries` now, all in one round trip (`fetch_together`); inside the block, the
    first `fetch` of each (the same key and inputs) takes its rows from here instead of asking
    the server again. For the independent reads a write makes before it writes anything: the
    code that reads stays as it is, and reads what it would have read a moment later in the
    same transaction. A `fetch` this block did not foresee, or one asked twice, runs as usual."""
    wanted = [q for q in queries if not q.lazy and _ahead_key(q) is not None]
    rows = fetch_together(*wanted) if wanted else []
    token = _ahead.set({_ahead_key(q): r for q, r in zip(wanted, rows, strict=True)})
    try:
        yield
    finally:
        _ahead.reset(token)


def fetch_together(*queries: Query) -> list[list[Any]]:
    """Each query's rows (as `fetch` gives them), all sent in one round trip: prepared
    statements in one pipeline, or one message of several statements (`_send`)."""
    return _send(None, queries)[1]


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
# `plan_cache_mode`, config/settings.py): a generic plan, made once without them, chose an exact
# scan of 50,000 rows where the values called for the HNSW index (bench/search.py). A pipeline
# of statements whose plan cannot depend on their values (a credential's lookup by its unique
# prefix, an INSERT, a row read back by its primary key) starts with this statement instead,
# which lets PostgreSQL keep a generic plan for them, and ends with the other, which puts the
# session's mode back for what follows in the same transaction (in autocommit the pipeline is one
# implicit transaction): what saves their planning on every request. Neither is a query of the
# application's: they bypass Django's cursor wrapper, and its statement counts.
GENERIC_PLAN: tuple[str, list[Any]] = ("SELECT set_config('plan_cache_mode', 'auto', true)", [])
CUSTOM_PLAN: tuple[str, list[Any]] = (
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)",
    [],
)


def _preparing() -> bool:
    """Whether prepared statements are on: the connection's psycopg threshold is set
    (settings.PREPARED_STATEMENTS; None turns psycopg's preparing off altogether)."""
    connection.ensure_connection()
    return getattr(connection.connection, "prepare_threshold", None) is not None


def _send_prepared(
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
    # Django's own wrapping of a new cursor (debug log, execute wrappers, error translation)
    wrap = connection._prepare_cursor  # type: ignore[attr-defined]
    cursors = [wrap(_PreparingCursor(raw)) for _ in statements]
    modes = [_PreparingCursor(raw), _PreparingCursor(raw)] if generic else []
    fetched = returning or [True] * len(statements)
    try:
        if len(statements) == 1 and not generic:
            cursors[0].execute(*statements[0])
            return [cursors[0].fetchall() if fetched[0] else []]
        with raw.pipeline():
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
        for cursor in (*cursors, *modes):
            cursor.close()


def fetch_after(
    statement: tuple[str, list[Any]], *queries: Query
) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """`statement`'s rows, then each query's rows (as `fetch` gives them), in one round trip:
    the server runs them in order, each planned after the one before has run, so what
    `statement` sets (a role, a setting) holds for the queries, as if sent apart."""
    rows, found = _send(statement, queries)
    assert rows is not None
    return rows, found


def execute(sql: str, params: list[Any], *, generic: bool = False) -> list[tuple[Any, ...]]:
    """One statement of fixed text (SQL written out, not compiled from a shape) and its rows,
    as a prepared statement when they are on: for a statement every request sends (the audit
    event's insert). `generic`: as `Query.generic`."""
    if _preparing():
        [rows] = _send_prepared([(sql, params)], generic=generic)
        return rows
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _send(
    first: tuple[str, list[Any]] | None, queries: tuple[Query, ...]
) -> tuple[list[tuple[Any, ...]] | None, list[list[Any]]]:
    """Prepared statements in a pipeline when they are on (and every query is reused);
    otherwise only Django's default client-side binding sends several statements at once; with
    server-side binding, or when a query cannot be reused, they run one by one in a
    transaction (a savepoint-less atomic block, so `first` still holds for them)."""
    planned = [_template(q) for q in queries]
    if _preparing() and all(isinstance(t, _Template | _Empty) for t, _ in planned):
        sent = [(t.sql, t.bound(v)) for t, v in planned if isinstance(t, _Template)]
        generic = all(q.generic for q in queries)
        fetched = iter(_send_prepared(([first] if first else []) + sent, generic=generic))
        first_rows = next(fetched) if first else None
        found: list[list[Any]] = []
        for query, (template, _) in zip(queries, planned, strict=True):
            if isinstance(template, _Template):
                rows = next(fetched)
                found.append(template.rows(rows) if query.lazy else template.models(rows))
            else:
                found.append([])
        return first_rows, found
    # Django's psycopg cursors bind client-side unless OPTIONS asks for server-side binding
    together = connection.settings_dict["OPTIONS"].get("server_side_binding") is not True
    if not together or any(template is None for template, _ in planned):
        return _one_by_one(queries, planned, first)
    statements, params = ([first[0]], list(first[1])) if first else ([], [])
    for template, values in planned:
        if isinstance(template, _Template):
            statements.append(template.sql)
            params.extend(template.bound(values))
    if not statements:
        return None, [[] for _ in planned]  # every query is one the ORM answers without SQL
    out: list[list[Any]] = []
    with connection.cursor() as cursor:
        cursor.execute(";\n".join(statements), params)
        first_rows = None
        if first:
            first_rows = cursor.fetchall()
            cursor.nextset()
        for query, (template, _) in zip(queries, planned, strict=True):
            if isinstance(template, _Template):
                fetched = cursor.fetchall()
                out.append(template.rows(fetched) if query.lazy else template.models(fetched))
                cursor.nextset()
            else:
                out.append([])
    return first_rows, out


def _one_by_one(
    queries: tuple[Query, ...],
    planned: list[tuple[_Template | _Empty | None, list[Any]]],
    first: tuple[str, list[Any]] | None,
) -> tuple[list[tuple[Any, ...]] | None, list[list[Any]]]:
    out: list[list[Any]] = []
    first_rows = None
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if first:
            cursor.execute(*first)
            first_rows = cursor.fetchall()
        for query, (template, values) in zip(queries, planned, strict=True):
            if template is None:
                found = list(query.build(query.inputs))
                out.append([_Made(m) for m in found] if query.lazy else found)
            elif isinstance(template, _Template):
                cursor.execute(template.sql, template.bound(values))
                fetched = cursor.fetchall()
                out.append(template.rows(fetched) if query.lazy else template.models(fetched))
            else:
                out.append([])
    return first_rows, out


def forget() -> None:
    """Drop every compiled shape (tests that change what a query compiles to)."""
    with _lock:
        _templates.clear()


def insert_together(*groups: Sequence[Model], then: Sequence[Query] = ()) -> list[list[Any]]:
    """INSERT each group of new instances (one model a group, its rows in one statement), in
    order, then read each query of `then`: all in one round trip (one message, as
    `fetch_together`), the rows a group's INSERT returns (an auto primary key, a generated
    column) set on its instances as `save(force_insert=True)` and `bulk_create` set them; each
    read is planned after the statements before it have run, so it reads them. Returns each
    read's rows (as `fetch` gives them). With prepared statements on, each is one, all in one
    pipeline.

    No signal is sent: a model with a `pre_save` or `post_save` receiver goes through the ORM,
    as does everything with server-side binding."""
    lists = [list(g) for g in groups if g]
    planned = [_insert_statement(g) for g in lists]
    server_side = connection.settings_dict["OPTIONS"].get("server_side_binding") is True
    if server_side or any(p is None for p in planned):
        for group in lists:  # as the ORM writes them: `save` for one, `bulk_create` for more
            if len(group) == 1:
                group[0].save(force_insert=True)
            else:
                type(group[0])._base_manager.bulk_create(group)
        return [fetch(q.key, q.build, q.inputs) for q in then]
    inserts = [p for p in planned if p is not None]
    reads = [_template(q) for q in then]
    # the reads that are one reused statement each, sent after the INSERTs
    sent_reads = [(t, values) for t, values in reads if isinstance(t, _Template)]
    found: list[list[Any]] = []
    if _preparing():
        # each INSERT (its text fixed by the group's model and size) and each read prepared, in
        # one pipeline
        sent = [(sql, ps) for sql, ps, _ in inserts]
        returning = [bool(compiler.returning_fields) for _, _, compiler in inserts]
        sent += [(t.sql, t.bound(values)) for t, values in sent_reads]
        returning += [True] * len(sent_reads)
        # INSERTs plan alike whatever their values; the reads say for themselves
        results = _send_prepared(sent, returning, generic=all(q.generic for q in then))
        for group, (_, _, compiler), returned in zip(lists, inserts, results, strict=False):
            if compiler.returning_fields:
                _set_returned(group, compiler, returned)
            _mark_saved(group)
        found = [
            t.models(rows) for (t, _), rows in zip(sent_reads, results[len(inserts) :], strict=True)
        ]
    else:
        statements = [sql for sql, _, _ in inserts] + [t.sql for t, _ in sent_reads]
        params = [param for _, ps, _ in inserts for param in ps]
        for t, values in sent_reads:
            params.extend(t.bound(values))
        with connection.cursor() as cursor:
            cursor.execute(";\n".join(statements), params)
            for group, (_, _, compiler) in zip(lists, inserts, strict=True):
                if compiler.returning_fields:
                    _set_returned(group, compiler, cursor.fetchall())
                _mark_saved(group)
                cursor.nextset()
            for t, _ in sent_reads:
                found.append(t.models(cursor.fetchall()))
                cursor.nextset()
    # a read the ORM answers without SQL, or one that is not reused: read now, after them
    ahead = iter(found)
    return [
        next(ahead) if isinstance(t, _Template) else fetch(q.key, q.build, q.inputs)
        for q, (t, _) in zip(then, reads, strict=True)
    ]


def _mark_saved(group: list[Model]) -> None:
    for obj in group:
        obj._state.adding = False
        obj._state.db = connection.alias


def _insert_statement(group: list[Model]) -> tuple[str, list[Any], Any] | None:
    """The one INSERT of `group` (SQL, parameters, its compiler), as `bulk_create` and `save`
    compile it; None when it is not one statement or a receiver must see it saved."""
    from django.db.models import signals
    from django.db.models.sql import InsertQuery

    model = type(group[0])
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        return None
    meta = model._meta
    for obj in group:
        obj._prepare_related_fields_for_save(operation_name="save")  # type: ignore[attr-defined]
        if obj.pk is None and meta.pk is not meta.auto_field:
            setattr(obj, meta.pk.attname, meta.pk.get_pk_value_on_save(obj))
    pk_set = all(obj.pk is not None for obj in group)
    if not pk_set and any(obj.pk is not None for obj in group):
        return None  # bulk_create splits such a batch in two
    fields = [
        f
        for f in meta.local_concrete_fields
        if not f.generated and (pk_set or f is not meta.auto_field)
    ]
    query = InsertQuery(model)
    query.insert_values(fields, group, raw=False)
    compiler = query.get_compiler(using=connection.alias)
    compiler.returning_fields = meta.db_returning_fields
    statements = compiler.as_sql()
    if len(statements) != 1:
        return None
    [(sql, params)] = statements
    return sql, list(params), compiler


def _set_returned(group: list[Model], compiler: Any, rows: list[tuple[Any, ...]]) -> None:
    fields = compiler.returning_fields
    columns = [f.get_col(type(group[0])._meta.db_table) for f in fields]
    converters = compiler.get_converters(columns)
    if converters:
        rows = list(compiler.apply_converters(rows, converters))
    for obj, row in zip(group, rows, strict=True):
        for field, value in zip(fields, row, strict=True):
            setattr(obj, field.attname, value)
