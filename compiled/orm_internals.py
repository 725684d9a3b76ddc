"""The one module that reads Django's ORM internals: a QuerySet's SQL with how its rows become
model instances, and a group of new instances' single INSERT.

`compiled` sends a query's SQL itself (in a pipeline, as a prepared statement, bound
with each call's values), so it must make the rows into models as iterating the QuerySet would,
and write an INSERT as `save` and `bulk_create` compile it. Django has no public API for either:
its own `ModelIterable` reads the compiler's layout of the SELECT list. Built by the ORM on
every call instead, a guarded search's query costs 12-17 ms of Python, a write's reads and
inserts ~20 ms (bench/README.md "Session 10"). What is read here, and nowhere else:

- `SQLCompiler.as_sql()`, `.select`, `.klass_info` (`model`, `select_fields`, `from_parent`,
  `related_klass_infos`, `local_setter`, `remote_setter`), `.annotation_col_map`,
  `.col_count` and `.get_converters()`, as `ModelIterable` and `RelatedPopulator` read them;
- `InsertQuery.insert_values()`, `SQLInsertCompiler.returning_fields`, `.get_converters()` and
  `.apply_converters()`, and `Model._prepare_related_fields_for_save()`, as `bulk_create` does.

tests/kindmem/test_orm_internals.py holds each against the ORM's own result (models with
select_related, deferred fields, annotations and converters; an INSERT and what it returns), so
a Django upgrade that changes any of them fails there, by name, before anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Model, QuerySet, signals
from django.db.models.sql import InsertQuery


class Empty:
    """A query the ORM answers without SQL (an empty IN list it cannot satisfy, `none()`)."""


@dataclass
class _Related:
    """One model of a `select_related`, made from its columns of a row (`RelatedPopulator`)."""

    model: type[Model]
    init_list: list[str]
    columns: slice
    pk_index: int
    local_setter: Callable[[Model, Model | None], None]
    remote_setter: Callable[[Model, Model], None]
    related: list[_Related]

    def populate(self, row: list[Any], parent: Model, db: str) -> None:
        data = row[self.columns]
        obj = None if data[self.pk_index] is None else self.model.from_db(db, self.init_list, data)
        if obj is not None:
            for related in self.related:
                related.populate(row, obj, db)
        self.local_setter(parent, obj)
        if obj is not None:
            self.remote_setter(obj, parent)


@dataclass
class RowMaker:
    """How one compiled query's rows become model instances, as `ModelIterable` makes them."""

    model: type[Model]
    init_list: list[str]
    model_fields: slice
    related: list[_Related]
    annotation_col_map: dict[str, int]
    converters: list[tuple[int, tuple[list[Any], Any]]]
    db: str
    pk_position: int

    def model_of(self, fetched: tuple[Any, ...]) -> Model:
        row = list(fetched)
        for position, (convs, expression) in self.converters:
            value = row[position]
            for convert in convs:
                value = convert(value, expression, connection)
            row[position] = value
        obj = self.model.from_db(self.db, self.init_list, row[self.model_fields])
        for related in self.related:
            related.populate(row, obj, self.db)
        for attr, position in self.annotation_col_map.items():
            setattr(obj, attr, row[position])
        return obj


class NotMadeHere(Exception):
    """A query whose rows this module does not make (multi-table inheritance's parents)."""


def _related(klass_info: dict[str, Any], select: list[Any]) -> list[_Related]:
    out = []
    for info in klass_info.get("related_klass_infos", []):
        if info["from_parent"]:
            raise NotMadeHere("select_related of a parent model")
        fields = info["select_fields"]
        columns = slice(fields[0], fields[-1] + 1)
        init_list = [f[0].target.attname for f in select[columns]]
        out.append(
            _Related(
                model=info["model"],
                init_list=init_list,
                columns=columns,
                pk_index=init_list.index(info["model"]._meta.pk.attname),
                local_setter=info["local_setter"],
                remote_setter=info["remote_setter"],
                related=_related(info, select),
            )
        )
    return out


def compile_select(qs: QuerySet) -> tuple[str, tuple[Any, ...], RowMaker] | Empty:
    """The SQL and parameters of `qs` (model instances, no `.values()`), and its row maker;
    `Empty` for one the ORM answers without SQL. Raises `NotMadeHere` for one whose rows it
    does not make."""
    compiler = qs.query.get_compiler(using=qs.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return Empty()
    select, klass_info = compiler.select, compiler.klass_info
    if klass_info is None:
        raise NotMadeHere("not a query of model instances")
    fields = klass_info["select_fields"]
    model_fields = slice(fields[0], fields[-1] + 1)
    converters = compiler.get_converters([s[0] for s in select[0 : compiler.col_count]])
    maker = RowMaker(
        model=klass_info["model"],
        init_list=[f[0].target.attname for f in select[model_fields]],
        model_fields=model_fields,
        related=_related(klass_info, select),
        annotation_col_map=dict(compiler.annotation_col_map or {}),
        converters=list(converters.items()),
        db=qs.db,
        pk_position=next(
            i for i in range(fields[0], fields[-1] + 1) if select[i][0].target.primary_key
        ),
    )
    return sql, tuple(params), maker


@dataclass
class Insert:
    """The one INSERT of a group of new instances of one model, as `bulk_create` and `save`
    compile it."""

    sql: str
    params: list[Any]
    group: list[Model]
    compiler: Any

    @property
    def returns_rows(self) -> bool:
        return bool(self.compiler.returning_fields)

    def saved(self, rows: list[tuple[Any, ...]]) -> None:
        """The instances as `save(force_insert=True)` leaves them: what the INSERT returned (an
        auto primary key, a generated column) set on each, and each marked saved."""
        if self.returns_rows:
            fields = self.compiler.returning_fields
            columns = [f.get_col(type(self.group[0])._meta.db_table) for f in fields]
            converters = self.compiler.get_converters(columns)
            if converters:
                rows = list(self.compiler.apply_converters(rows, converters))
            for obj, row in zip(self.group, rows, strict=True):
                for field, value in zip(fields, row, strict=True):
                    setattr(obj, field.attname, value)
        for obj in self.group:
            obj._state.adding = False
            obj._state.db = connection.alias


def compile_insert(group: list[Model]) -> Insert | None:
    """The one INSERT of `group`; None when it is not one statement, or when a receiver must
    see the instances saved (`pre_save` / `post_save`): then the ORM writes them."""
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
    return Insert(sql=sql, params=list(params), group=group, compiler=compiler)
