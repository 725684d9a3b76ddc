"""A query's shape: its inputs with every value replaced by a placeholder, and the SQL the ORM
compiles from that shape once, bound with each call's own values (compiled).

The shape of `inputs` is `inputs` with the k-th distinct value replaced by the k-th placeholder
of its kind, so equal values stay equal (the guard merges and deduplicates id sets: the
structure it builds depends on which ids are equal, and the placeholders keep exactly that).
Strings, UUIDs, datetimes and vectors are values; numbers, booleans, None, classes, the length
of every tuple or set and the keys of every dict are shape.

The placeholders are values no caller can send (a random token per process), so finding them
among the compiled parameters is exact, and a query whose SQL holds one inline (not as a
parameter) is refused, not cached: it runs through the ORM every time. The SQL is therefore
the ORM's own for the caller's values, up to the order of the ids inside an IN list.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Model, QuerySet
from pgvector import Vector

from compiled.orm_internals import Empty, NotMadeHere, RowMaker, compile_select

logger = logging.getLogger(__name__)

# Shapes kept per process; a shape is a query and the structure of its inputs (a reader kind,
# the filters given, a hit count), so a few hundred cover every request a process serves.
MAX_SHAPES = 512

_TOKEN = secrets.token_hex(6)
_UUID_BASE = uuid.UUID(int=secrets.randbits(128)).int & ~0xFFFFFFFF  # the low 32 bits: the number
# Far in the future: a placeholder for a read's "now" survives `unexpired(at)`'s max(at, now).
_DATETIME_BASE = datetime(2999, 1, 1, tzinfo=UTC)


def _uuid_placeholder(number: int) -> uuid.UUID:
    return uuid.UUID(int=_UUID_BASE | number)


def _text_placeholder(number: int) -> str:
    # lower case, no space, quote or leading '-': one word wherever text is parsed; the final
    # letter keeps the k-th from being a prefix of the (10k)-th
    return f"zqkm{_TOKEN}x{number}q"


def _datetime_placeholder(number: int) -> datetime:
    return _DATETIME_BASE + timedelta(microseconds=number + 1)


def _vector_placeholder(number: int, dimensions: int) -> Vector:
    return Vector([float(number + 2), *([0.0] * (dimensions - 1))])


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
        number = self._seen.get((kind, identity))
        if number is None:
            number = self._seen[(kind, identity)] = len(self.values)
            self.values.append(value)
        return number

    def shape(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | float | type):
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
            number = self._index("vector", id(value), value)
            return _vector_placeholder(number, value.dimensions())
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
    for number, value in enumerate(values):
        if isinstance(value, uuid.UUID) or (isinstance(value, str) and _is_canonical_uuid(value)):
            index[_uuid_placeholder(number)] = (number, "uuid")
            index[str(_uuid_placeholder(number))] = (number, "text")
        elif isinstance(value, str):
            index[_text_placeholder(number)] = (number, "text")
        elif isinstance(value, datetime):
            index[_datetime_placeholder(number)] = (number, "datetime")
        elif isinstance(value, Vector):
            index[_vector_placeholder(number, value.dimensions()).to_text()] = (number, "vector")
    return index


# A compiled parameter, from the caller's values.
_Binder = Callable[[list[Any]], Any]


def _bind_one(number: int, form: str) -> _Binder:
    if form == "uuid":
        return lambda values: uuid.UUID(str(values[number]))
    if form == "vector":
        return lambda values: values[number]
    if form == "datetime":
        return lambda values: values[number]
    return lambda values: str(values[number])


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
        number, form = index[param]
        return _bind_one(number, form)
    if isinstance(param, uuid.UUID | str) and param in index:
        number, form = index[param]
        return _bind_one(number, form)
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
@dataclass
class Template:
    """One shape's SQL, how to bind its parameters, and how to make its rows into models."""

    sql: str
    params: list[Any]
    binders: list[tuple[int, _Binder]]
    maker: RowMaker

    def bound(self, values: list[Any]) -> list[Any]:
        """The parameters for these values."""
        params = list(self.params)
        for position, bind in self.binders:
            params[position] = bind(values)
        return params

    def models(self, rows: list[tuple[Any, ...]]) -> list[Model]:
        """The rows as iterating the QuerySet makes them (select_related and annotations)."""
        return [self.maker.model_of(row) for row in rows]

    def rows(self, rows: list[tuple[Any, ...]]) -> list[Row]:
        return [Row(self.maker, row) for row in rows]


class Row:
    """One row of a query, made into its model only when asked: a hybrid search ranks both
    legs' rows by primary key and makes models of the few it returns."""

    __slots__ = ("_maker", "_model", "_row")

    def __init__(self, maker: RowMaker, row: tuple[Any, ...]) -> None:
        self._maker, self._row = maker, row
        self._model: Model | None = None

    @property
    def pk(self) -> Any:
        return self._row[self._maker.pk_position]

    def annotation(self, name: str) -> Any:
        """An annotation's value (a score, a distance) without making the model."""
        return self._row[self._maker.annotation_col_map[name]]

    def model(self) -> Any:
        if self._model is None:
            self._model = self._maker.model_of(self._row)
        return self._model


class Made:
    """A `Row` the ORM made already (a query that is not reused)."""

    __slots__ = ("_model",)

    def __init__(self, model: Model) -> None:
        self._model = model

    @property
    def pk(self) -> Any:
        return self._model.pk

    def model(self) -> Model:
        return self._model


_templates: OrderedDict[Hashable, Template | Empty | None] = OrderedDict()
_lock = threading.Lock()


def _compile(qs: QuerySet, values: list[Any]) -> Template | Empty | None:
    """The template of `qs`, built from the placeholders of `values`; None when its SQL
    cannot be reused with other values."""
    compiled = compile_select(qs)
    if isinstance(compiled, Empty):
        return compiled
    sql, params, maker = compiled
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
    return Template(sql=sql, params=list(params), binders=binders, maker=maker)


def template_of(
    key: Hashable, build: Callable[[Any], QuerySet], inputs: Any
) -> tuple[Template | Empty | None, list[Any]]:
    """The template of `build(inputs)` under `key` (None: it runs through the ORM) and the
    values to bind into it."""
    walk = _Walk()
    try:
        shape = walk.shape(inputs)
    except TypeError:  # an input with no placeholder: through the ORM, every time
        logger.warning("a query's inputs have no shape: not reused", exc_info=True)
        return None, []
    cache_key = (key, _hashable(shape))
    try:
        template = _templates[cache_key]
    except KeyError:
        try:
            template = _compile(build(shape), walk.values)
        except NotMadeHere:
            template = None
        except Exception:  # the ORM refused a placeholder: this shape runs through the ORM
            logger.debug("a query shape is not reused", exc_info=True)
            template = None
        with _lock:
            _templates[cache_key] = template
            while len(_templates) > MAX_SHAPES:
                _templates.popitem(last=False)
    return template, walk.values


def identity(key: Hashable, inputs: Any) -> Hashable | None:
    """The query and its values, as one hashable (None for inputs with no shape): equal for
    two reads that would run the same SQL with the same parameters."""
    walk = _Walk()
    try:
        shape = _hashable(walk.shape(inputs))
    except TypeError:
        return None
    values = tuple(v.to_text() if isinstance(v, Vector) else v for v in walk.values)
    return (key, shape, values)


def compiled_shapes(key: Hashable) -> list[Template | Empty | None]:
    """The shapes compiled under `key` (tests)."""
    return [t for k, t in _templates.items() if isinstance(k, tuple) and k[0] == key]


def forget() -> None:
    """Drop every compiled shape (tests that change what a query compiles to)."""
    with _lock:
        _templates.clear()
