"""Compiled shapes run as prepared statements (compiled, settings.PREPARED_STATEMENTS):
planned once per connection, several sent in one pipeline, the same rows as without."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection, connections
from django.utils import timezone
from pgvector import Vector
from psycopg.adapt import PyFormat
from psycopg.pq import Format

import compiled as engine
from compiled import compiled
from compiled.shapes import compiled_shapes
from compiled.statements import open_pipeline
from facts import services
from facts.models import Revision
from kindmem.access import Readers

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_shapes() -> None:
    engine.forget()


@compiled()
def readable(tenant_id: Any, readers: Readers, now: Any) -> Any:
    return Revision.objects.of_tenant(tenant_id).live(now).readable_by(readers).order_by("id")


def prepared_texts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def reader_of(world: Any, participant: str) -> Readers:
    return Readers(
        project_ids=frozenset({str(world.project.id)}),
        org_ids=frozenset({str(world.org.id)}),
        participant_ids=frozenset({participant}),
    )


def note(world: Any, text: str, participant: str) -> Revision:
    scope = {"project_id": str(world.project.id), "participant_id": participant}
    return services.fact_create(
        principal=world.admin.principal, type="note", content=text, scope=scope
    ).revision


def test_a_shape_is_one_prepared_statement_for_every_reader_of_it(world) -> None:
    # given: two end users' facts
    mine, theirs = note(world, "mine", "p-1"), note(world, "theirs", "p-2")
    now = timezone.now()

    # when: each reads through the same shape
    first = readable(world.tenant.id, reader_of(world, "p-1"), now).all()
    second = readable(world.tenant.id, reader_of(world, "p-2"), now).all()

    # then: each got its own rows, from one statement the server holds prepared, its values
    # bound as parameters ($n), none written into its text
    assert [r.pk for r in first] == [mine.pk]
    assert [r.pk for r in second] == [theirs.pk]
    [template] = compiled_shapes(readable(world.tenant.id, reader_of(world, "p-1"), now).key)
    numbered = iter(range(1, 10_000))
    as_prepared = re.sub("%s", lambda _: f"${next(numbered)}", template.sql)
    assert prepared_texts().count(as_prepared) == 1
    assert "p-1" not in as_prepared
    assert "p-2" not in as_prepared


def test_queries_fetched_together_travel_in_one_pipeline(world) -> None:
    # given: two queries of different shapes
    note(world, "mine", "p-1")
    now = timezone.now()
    queries = [
        readable(world.tenant.id, reader_of(world, "p-1"), now),
        readable(world.tenant.id, reader_of(world, "p-2"), now),
    ]
    pipelines: list[Any] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        pipelines.append(open_pipeline())
        return execute(sql, params, many, context)

    # when: they are fetched together
    with connection.execute_wrapper(record):
        one, two = engine.fetch_together(*queries)

    # then: both statements went in the same pipeline (one round trip), each with its rows
    assert len(pipelines) == 2
    assert pipelines[0] is not None
    assert pipelines[0] is pipelines[1]
    assert len(one) == 1
    assert two == []


def test_with_prepared_statements_off_the_same_rows_come_by_client_side_binding(world) -> None:
    # given: facts, and the rows read with prepared statements on
    note(world, "mine", "p-1")
    note(world, "more of mine", "p-1")
    inputs = (world.tenant.id, reader_of(world, "p-1"), timezone.now())
    on = [r.pk for r in readable(*inputs).all()]
    connection.connection.execute("DEALLOCATE ALL")

    # when: the connection has psycopg's preparing off (KINDMEM_PREPARED_STATEMENTS=0)
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        off = [r.pk for r in readable(*inputs).all()]
        held = prepared_texts()
    finally:
        connection.connection.prepare_threshold = threshold

    # then: the same rows, and nothing prepared
    assert off == on
    assert len(on) == 2
    assert held == []


def test_a_new_connection_holds_the_semantic_legs_scan_settings() -> None:
    # given: a connection opened afresh (its session's settings set on connect: facts.apps)
    fresh = connections.create_connection("default")
    try:
        with fresh.cursor() as cursor:
            # when: asked for its HNSW settings
            cursor.execute(
                "SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search'),"
                " current_setting('hnsw.max_scan_tuples')"
            )
            found = cursor.fetchone()
    finally:
        fresh.close()

    # then: they are facts.search's, not pgvector's defaults (relaxed off, 40, 20 000)
    from facts.search import EF_SEARCH, MAX_SCAN_TUPLES

    assert found == ("strict_order", str(EF_SEARCH), str(MAX_SCAN_TUPLES))


def test_lookups_keep_a_generic_plan_and_searches_are_planned_for_their_values(
    api, world, settings
) -> None:
    # given: the hashing embedder, and a fact to find
    settings.EMBEDDER = "hashing"
    note(world, "likes green tea", "p-1")
    engine.forget()
    connection.connection.execute("DEALLOCATE ALL")

    # when: an app searches more times than PostgreSQL plans for the values before it considers
    # a generic plan (5)
    for _ in range(8):
        response = api.post(
            "/v1/facts/search",
            {"mode": "semantic", "query": "green tea"},
            format="json",
            **world.app.headers,
        )
        assert response.status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        held = cursor.fetchall()

    # then: the key's lookup (by its unique prefix) and the audit event's insert run on a
    # generic plan, while the semantic leg (its index scan, and the exact scan after it: one
    # readable fact) is planned for each search's values
    lookup = [row for row in held if '"kindmem_apikey"' in row[0] and "prefix" in row[0]]
    audit = [row for row in held if row[0].lstrip().startswith("WITH policy AS")]
    leg = [row for row in held if "<=>" in row[0]]
    assert len(lookup) == 1
    assert len(audit) == 1
    assert len(leg) == 2
    assert lookup[0][1] > 0
    assert audit[0][1] > 0
    assert [generic for _, generic, _ in leg] == [0, 0]
    assert all(custom >= 8 for _, _, custom in leg)


def test_a_writes_dedup_keeps_a_generic_plan_that_finds_the_content_by_its_index(
    api, world, settings
) -> None:
    # given: the hashing embedder, an end user with facts, and no statement prepared yet
    settings.EMBEDDER = "hashing"
    for i in range(20):
        note(world, f"earlier note {i}", "p-1")
    connection.connection.execute("DEALLOCATE ALL")
    engine.forget()

    # when: an app writes into that scope more times than PostgreSQL plans for the values
    # before it considers a generic plan (5)
    for i in range(8):
        response = api.post(
            "/v1/facts",
            {
                "type": "note",
                "content": f"new note {i}",
                "scope": {"project_id": str(world.project.id), "participant_id": "p-1"},
            },
            format="json",
            **world.app.headers,
        )
        assert response.status_code == 201, response.json()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, generic_plans FROM pg_prepared_statements"
            " WHERE statement LIKE '%%\"content_hash\" = $%%'"
        )
        [(statement, generic_plans)] = cursor.fetchall()
        # a test's tables are small enough to read whole: the plan among the indexes is asked
        cursor.execute("ANALYZE facts_revision, facts_fact")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN (GENERIC_PLAN) " + statement)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    # then: the dedup's lookup runs on a generic plan, and that plan finds the content by its
    # hash's index, whatever the size of the writer's scope
    assert generic_plans > 0
    assert "revision_current_content" in plan


def test_a_semantic_search_sends_its_vector_in_binary_and_finds_what_text_found(
    world, settings
) -> None:
    # given: the hashing embedder, facts of an end user, and the search's hits with the vector
    # sent as text (prepared statements off: Django's client-side binding writes it out)
    settings.EMBEDDER = "hashing"
    for text in ("likes green tea", "walks the dog at six", "reads poetry in bed"):
        note(world, text, "p-1")
    from facts.search import FactSearch, fact_search

    search = FactSearch(
        tenant_id=world.tenant.id,
        readers=reader_of(world, "p-1"),
        mode="semantic",
        query="green tea",
        top_k=3,
    )
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        as_text = [(h.revision.pk, round(h.score, 6)) for h in fact_search(search=search)]
    finally:
        connection.connection.prepare_threshold = threshold
    sent: list[Any] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "<=>" in sql:
            sent.extend(params)
        return execute(sql, params, many, context)

    # when: the same search runs as a prepared statement
    with connection.execute_wrapper(record):
        as_binary = [(h.revision.pk, round(h.score, 6)) for h in fact_search(search=search)]

    # then: its vector went as pgvector's Vector (binary on the wire: compiled), no
    # vector was written out as text, and the hits and scores are the same
    assert any(isinstance(p, Vector) for p in sent)
    assert not any(isinstance(p, str) and p.startswith("[") for p in sent)
    dumper = connection.connection.adapters.get_dumper(Vector, PyFormat.AUTO)
    assert dumper.format == Format.BINARY
    assert as_binary == as_text
    assert len(as_text) == 3
