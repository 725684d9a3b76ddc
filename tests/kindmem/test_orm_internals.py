"""The Django internals compiled.orm_internals reads, held against the ORM's own result:
a Django upgrade that changes them fails here, by name, before any request does."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.models import Model, Value
from django.db.models.sql import InsertQuery
from django.db.models.sql.compiler import SQLCompiler, SQLInsertCompiler

from compiled.orm_internals import Empty, compile_insert, compile_select
from facts import services
from facts.models import Revision, Subject, subject_rows
from kindmem.models import Run
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_internals_read_are_still_there() -> None:
    # given: a compiled query of revisions with their facts selected
    compiler = Revision.objects.select_related("fact").query.get_compiler(using="default")
    assert isinstance(compiler, SQLCompiler)
    compiler.as_sql()

    # then: each name the adapter reads, in the form it reads it
    info = compiler.klass_info
    assert info["model"] is Revision
    assert isinstance(compiler.select, list)
    assert isinstance(compiler.col_count, int)
    assert hasattr(compiler, "annotation_col_map")
    [related] = info["related_klass_infos"]
    assert {"model", "select_fields", "from_parent", "local_setter", "remote_setter"} <= set(
        related
    )
    assert hasattr(compiler, "get_converters")
    assert hasattr(SQLInsertCompiler, "apply_converters")
    assert hasattr(SQLInsertCompiler, "returning_fields")
    assert hasattr(InsertQuery, "insert_values")
    assert hasattr(Model, "_prepare_related_fields_for_save")


def made_by_adapter(qs: Any) -> list[Any]:
    compiled = compile_select(qs)
    assert not isinstance(compiled, Empty)
    sql, params, maker = compiled
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [maker.model_of(row) for row in cursor.fetchall()]


def fields_of(obj: Model) -> dict[str, Any]:
    loaded = obj.get_deferred_fields()
    return {
        f.attname: getattr(obj, f.attname)
        for f in obj._meta.concrete_fields
        if f.attname not in loaded
    }


def test_rows_become_the_models_the_orm_makes(world, django_assert_num_queries) -> None:
    # given: a fact with a subject, read with its fact selected, fields deferred, annotations
    revision = services.fact_create(
        principal=world.admin.principal,
        type="note",
        content={"drink": "tea"},
        scope={"project_id": str(world.project.id), "participant_id": "p-1"},
    ).revision
    qs = (
        Revision.objects.filter(pk=revision.pk)
        .select_related("fact")
        .defer("embedding", "search_vector")
        .annotate(marker=Value(7), subject_rows=subject_rows(revision.tenant_id))
    )

    # when: its compiled SQL is run outside the ORM and its rows made into models
    [got] = made_by_adapter(qs)
    [expected] = list(qs)

    # then: the same fields (JSON decoded by the field's converter), the same deferred ones,
    # the related fact loaded (no query to reach it), the annotations set
    assert fields_of(got) == fields_of(expected)
    assert got.get_deferred_fields() == expected.get_deferred_fields()
    assert got.content == {"drink": "tea"}
    with django_assert_num_queries(0):
        assert fields_of(got.fact) == fields_of(expected.fact)
    assert (got.marker, got.subject_rows) == (expected.marker, expected.subject_rows)
    assert not got._state.adding


def test_nested_select_related_rows_become_the_orms_models(world, django_assert_num_queries):
    # given: a run, read with its project, agent, user and its minter's key's user
    minted = factories.run_create(world.app, world.project, participant_id="p-1", thread_id=None)
    qs = Run.objects.select_related("project", "agent", "user", "minted_by__user").filter(
        pk=minted.run.pk
    )

    # when: made from its rows outside the ORM
    [got] = made_by_adapter(qs)
    [expected] = list(qs)

    # then: every related model as the ORM made it, a missing one (no user) None, no query
    with django_assert_num_queries(0):
        assert fields_of(got) == fields_of(expected)
        assert fields_of(got.project) == fields_of(expected.project)
        assert fields_of(got.agent) == fields_of(expected.agent)
        assert got.user is None
        assert expected.user is None
        assert fields_of(got.minted_by) == fields_of(expected.minted_by)
        assert got.minted_by.user == expected.minted_by.user


def test_a_group_is_one_insert_that_returns_what_save_would_set(world) -> None:
    # given: a fact's revision and two new subject rows (an auto primary key each)
    revision = services.fact_create(
        principal=world.admin.principal, type="note", content="likes tea"
    ).revision
    rows = [
        Subject(
            tenant_id=world.tenant.id,
            revision=revision,
            fact_id=revision.fact_id,
            kind="participant",
            subject_id=who,
        )
        for who in ("p-1", "p-2")
    ]

    # when: compiled as one INSERT and run
    insert = compile_insert(rows)
    assert insert is not None
    with connection.cursor() as cursor:
        cursor.execute(insert.sql, insert.params)
        insert.saved(cursor.fetchall() if insert.returns_rows else [])

    # then: each has the key the database gave it, and is a saved instance
    stored = dict(Subject.objects.filter(revision=revision).values_list("subject_id", "id"))
    assert {r.subject_id: r.pk for r in rows} == {
        k: v for k, v in stored.items() if k in {"p-1", "p-2"}
    }
    assert not any(r._state.adding for r in rows)
