"""Queries compiled once per shape (compiled): reused with other values, and refused
where reuse would be wrong."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db.models import Q
from django.utils import timezone

import compiled as engine
from compiled import Read, compiled
from compiled.shapes import compiled_shapes
from facts import services
from facts.models import Revision
from kindmem.access import Readers
from kindmem.models import Org, Project
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_shapes() -> None:
    engine.forget()


def shapes(read: Read) -> list[Any]:
    return compiled_shapes(read.key)


def note(principal: Any, text: str, scope: dict[str, str]) -> Revision:
    return services.fact_create(
        principal=principal, type="note", content=text, scope=scope
    ).revision


@compiled()
def readable(tenant_id: Any, readers: Readers, now: Any) -> Any:
    return Revision.objects.of_tenant(tenant_id).live(now).readable_by(readers).order_by("id")


def test_one_shape_serves_every_reader_of_it_with_its_own_rows(world) -> None:
    # given: facts of two end users of one project
    scope = {"project_id": str(world.project.id)}
    mine = note(world.admin.principal, "mine", {**scope, "participant_id": "p-1"})
    theirs = note(world.admin.principal, "theirs", {**scope, "participant_id": "p-2"})
    project, org = str(world.project.id), str(world.org.id)

    def reader(participant: str) -> Readers:
        return Readers(
            project_ids=frozenset({project}),
            org_ids=frozenset({org}),
            participant_ids=frozenset({participant}),
        )

    # when: each reads through the same shape, one after the other
    now = timezone.now()
    first = readable(world.tenant.id, reader("p-1"), now).all()
    second = readable(world.tenant.id, reader("p-2"), now).all()

    # then: one compiled query, and each reader got only its own fact
    assert len(shapes(readable(world.tenant.id, reader("p-1"), now))) == 1
    assert [r.pk for r in first] == [mine.pk]
    assert [r.pk for r in second] == [theirs.pk]


def test_ids_equal_across_reader_fields_are_a_shape_of_their_own(world) -> None:
    # given: an app's readers (its project in project_ids and in on_behalf_of_project_ids) and
    # a reader whose two sets name different projects
    other = factories.project_create(world.tenant, world.org, name="other")
    wide = note(world.admin.principal, "project-wide", {"project_id": str(world.project.id)})
    person = note(
        world.admin.principal,
        "an end user's",
        {"project_id": str(other.id), "participant_id": "p-9"},
    )
    same = Readers(
        project_ids=frozenset({str(world.project.id)}),
        on_behalf_of_project_ids=frozenset({str(world.project.id)}),
    )
    different = Readers(
        project_ids=frozenset({str(world.project.id)}),
        on_behalf_of_project_ids=frozenset({str(other.id)}),
    )

    # when: both read
    now = timezone.now()
    got_same = readable(world.tenant.id, same, now).all()
    got_different = readable(world.tenant.id, different, now).all()

    # then: two shapes, and each reader gets what the ORM gives it
    assert len(shapes(readable(world.tenant.id, same, now))) == 2
    for readers, got in ((same, got_same), (different, got_different)):
        assert [r.pk for r in got] == [
            r.pk for r in readable(world.tenant.id, readers, timezone.now()).queryset()
        ]
    assert {r.pk for r in got_different} == {wide.pk, person.pk}


def test_a_query_that_takes_its_own_time_is_never_reused(world) -> None:
    # given: a fact, and a query that asks for live revisions without being given "now"
    revision = note(world.admin.principal, "x", {})

    @compiled()
    def stale(tenant_id: Any) -> Any:
        return Revision.objects.of_tenant(tenant_id).live()

    # when: it runs twice
    for _ in range(2):
        got = stale(world.tenant.id).all()

        # then: it answers, through the ORM each time: its time would go stale if reused
        assert [r.pk for r in got] == [revision.pk]
    assert shapes(stale(world.tenant.id)) == [None]


def test_a_value_written_into_the_sql_is_never_reused(world) -> None:
    # given: a query that puts its value into the SQL text rather than a parameter
    revision = note(world.admin.principal, "inline", {})

    @compiled()
    def inline(content_hash: str) -> Any:
        return Revision.objects.extra(where=[f"content_hash = '{content_hash}'"])  # noqa: S610

    # when / then: it answers for each value, and is not compiled for reuse
    assert [r.pk for r in inline(revision.content_hash).all()] == [revision.pk]
    assert inline("0" * 64).all() == []
    assert shapes(inline("0" * 64)) == [None]


def test_a_shape_the_orm_answers_without_sql_runs_no_query(
    world, django_assert_num_queries
) -> None:
    # given: a query that an empty id list makes empty (Django runs no SQL for it)
    @compiled()
    def by_ids(ids: tuple[uuid.UUID, ...]) -> Any:
        return Revision.objects.filter(Q(id__in=ids))

    # when / then: no statement, and nothing found
    with django_assert_num_queries(0):
        assert by_ids(()).all() == []
        assert by_ids(()).all() == []


def test_rows_come_back_as_the_orm_makes_them(world) -> None:
    # given: a fact with a subject, read with its fact selected and an annotation
    revision = note(world.admin.principal, {"text": "tea"}, {})

    @compiled()
    def with_fact(pk: uuid.UUID) -> Any:
        from django.db.models import Value

        return (
            Revision.objects.filter(pk=pk)
            .select_related("fact")
            .defer("embedding")
            .annotate(marker=Value(7))
        )

    # when: read twice (compiled, then reused)
    for _ in range(2):
        [got] = with_fact(revision.pk).all()

        # then: the same model, its related fact loaded, its annotation set, JSON decoded
        expected = with_fact(revision.pk).queryset().get()
        assert got.pk == expected.pk
        assert got.content == {"text": "tea"}
        assert got.fact.type == "note"
        assert got.fact.tenant_id == world.tenant.id
        assert got.marker == 7
        assert got.created_at == expected.created_at
    assert len(shapes(with_fact(revision.pk))) == 1


def test_a_new_tenant_reuses_the_shape_and_sees_only_its_own(world, other_world) -> None:
    # given: a fact in each of two tenants
    mine = note(world.admin.principal, "a", {})
    theirs = note(other_world.admin.principal, "b", {})

    # when: each tenant's admin reads through one shape
    now = timezone.now()
    a = readable(world.tenant.id, Readers(all=True), now).all()
    b = readable(other_world.tenant.id, Readers(all=True), now).all()

    # then: one shape, one tenant's rows each
    assert len(shapes(readable(world.tenant.id, Readers(all=True), now))) == 1
    assert [r.pk for r in a] == [mine.pk]
    assert [r.pk for r in b] == [theirs.pk]


def test_a_run_token_is_looked_up_through_its_compiled_query(api, world) -> None:
    # given: two runs of the same app
    first = factories.run_create(world.app, world.project, participant_id="p-1", thread_id=None)
    second = factories.run_create(world.app, world.project, participant_id="p-2", thread_id=None)

    # when: each lists facts
    for run in (first, second):
        assert api.get("/v1/facts", **run.headers).status_code == 200

    # then: one compiled lookup served both credentials
    from kindmem.authentication import run_of

    assert len(shapes(run_of("any"))) == 1


@pytest.mark.parametrize(
    "lookup",
    [
        lambda text: Q(search_text__contains=text),  # a LIKE pattern made from the value
        lambda text: Q(content__contains={"text": text}),  # a JSON adapter holding it
    ],
)
def test_a_value_inside_a_parameter_built_from_it_is_never_reused(world, lookup) -> None:
    # given: a fact, and a query whose parameter is made from the value, not the value itself
    revision = note(world.admin.principal, {"text": "green tea"}, {})

    @compiled()
    def matching(text: str) -> Any:
        return Revision.objects.filter(lookup(text))

    # when / then: each value gets its own answer, and the query is not compiled for reuse
    assert [r.pk for r in matching("green tea").all()] == [revision.pk]
    assert matching("black coffee").all() == []
    assert shapes(matching("black coffee")) == [None]


@compiled()
def projects_of(tenant_id: Any) -> Any:
    return Project.objects.filter(tenant_id=tenant_id).order_by("id")


def test_a_read_fetched_ahead_is_taken_from_there_once(world) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    tenant_id = world.tenant.id
    expected = list(projects_of(tenant_id).queryset())

    with CaptureQueriesContext(connection) as captured, engine.read_ahead(projects_of(tenant_id)):
        # given: one read ahead (one statement)
        ahead = len(captured)
        # when: the code asks for it, then asks again, then asks something unforeseen
        first = projects_of(tenant_id).all()
        after_first = len(captured)
        second = projects_of(tenant_id).all()
        other = projects_of(uuid.uuid4()).all()

    # then: the first ask took the rows read ahead; the second and the unforeseen one read
    assert ahead == 1
    assert after_first == 1
    assert len(captured) == 3
    assert [p.id for p in first] == [p.id for p in second] == [p.id for p in expected]
    assert other == []


@compiled()
def projects_of_org(org_id: Any) -> Any:
    return Project.objects.filter(org_id=org_id).order_by("name")


def test_new_rows_and_a_read_after_them_go_in_one_round_trip(world) -> None:
    from tests.round_trips import listed, round_trips

    # given: a new org and two projects of it, not yet written
    org = Org(tenant=world.tenant, name="one-trip")
    projects = [Project(tenant=world.tenant, org=org, name=f"p{i}") for i in range(2)]

    # when: they are inserted and their org's projects read after them
    with round_trips() as trips:
        [read] = engine.insert([org], projects, then=[projects_of_org(org.id)])

    # then: one round trip, the read saw the rows, and the instances are saved ones
    assert len(trips) == 1, listed(trips)
    assert [p.name for p in read] == ["p0", "p1"]
    assert not org._state.adding
    assert not any(p._state.adding for p in projects)
    assert Org.objects.filter(pk=org.pk).exists()


def test_inserted_rows_get_their_returned_columns(world) -> None:
    from facts.models import Subject

    # given: a fact's revision, and two new subject rows (an auto primary key each)
    revision = note(world.admin.principal, "likes tea", {})
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

    # when: inserted together
    assert engine.insert(rows) == []

    # then: each has the key the database gave it, as bulk_create would set it
    stored = dict(Subject.objects.filter(revision=revision).values_list("subject_id", "id"))
    assert {r.subject_id: r.pk for r in rows} == {
        k: v for k, v in stored.items() if k in {"p-1", "p-2"}
    }
