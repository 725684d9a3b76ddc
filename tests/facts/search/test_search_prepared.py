"""The keyword leg as a prepared statement (compiled): planned for its values on every
execution (the session's `plan_cache_mode`, config/settings_database.py), so each word of the
query is parsed once, at planning, as when it was sent as a plain statement; never once per row
a generic plan scores."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import compiled
from facts.search import FactSearch, fact_search
from kindmem.access import readers_for
from tests.facts.search.conftest import plant

pytestmark = pytest.mark.django_db


def keyword_hits(world: Any, query: str) -> tuple[list[Any], list[str]]:
    """The hits of a keyword search and the notices the server sent while it ran."""
    notices: list[str] = []
    handler = lambda diagnostic: notices.append(diagnostic.message_primary)  # noqa: E731
    connection.connection.add_notice_handler(handler)
    try:
        hits = fact_search(
            search=FactSearch(
                tenant_id=world.tenant.id,
                readers=readers_for(world.admin.principal),
                mode="keyword",
                query=query,
                top_k=10,
            )
        )
    finally:
        connection.connection.remove_notice_handler(handler)
    return [(h.revision.pk, round(h.score, 9)) for h in hits], notices


def test_every_connection_plans_each_execution_for_its_values() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('plan_cache_mode')")
        assert cursor.fetchone() == ("force_custom_plan",)


def test_a_prepared_keyword_search_parses_its_words_once(world) -> None:
    # given: forty matching facts, a question with a stop word ("does": no lexeme, and a
    # notice from the server each time it is parsed), and its hits with prepared statements off
    plant(world.tenant, [f"coffee order number {i}" for i in range(40)] + ["tea time"])
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        expected, _ = keyword_hits(world, "does coffee")
    finally:
        connection.connection.prepare_threshold = threshold

    # when: the leg runs as a prepared statement, more times than PostgreSQL's plan cache
    # takes before it would consider a generic plan (5)
    compiled.forget()
    runs = [keyword_hits(world, "does coffee") for _ in range(7)]

    # then: the same ten hits and scores every time, and the stop word parsed a bounded number
    # of times (at planning, once per place it appears), not once per row scored (41 rows,
    # several places each: 201 notices under a generic plan)
    for hits, notices in runs:
        assert hits == expected
        assert len(hits) == 10
        assert len(notices) <= 8, notices
