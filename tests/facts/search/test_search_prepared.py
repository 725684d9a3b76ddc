"""The keyword leg as a prepared statement's generic plan (kindmem.prepared, kindmem.fulltext):
each word of the query parsed once per execution, not once per row it scores, with the same
hits as a plan made for the values."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from facts.search import FactSearch, fact_search
from kindmem import prepared
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


@pytest.mark.parametrize("plan", ["force_generic_plan", "force_custom_plan"])
def test_a_keyword_search_parses_its_words_once_whatever_the_plan(world, plan) -> None:
    # given: forty matching facts, and a question with a stop word ("does": no lexeme, and a
    # notice from the server each time it is parsed)
    plant(world.tenant, [f"coffee order number {i}" for i in range(40)] + ["tea time"])
    prepared.forget()
    expected, _ = keyword_hits(world, "does coffee")

    # when: the leg runs again under the plan kind (a prepared statement's generic plan
    # has no value of the text to fold into a constant)
    with connection.cursor() as cursor:
        cursor.execute(f"SET plan_cache_mode = {plan}")
    try:
        hits, notices = keyword_hits(world, "does coffee")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = auto")

    # then: the same ten hits and scores, and the stop word parsed a bounded number of times
    # (once per place the term appears in the query: its InitPlans), not once per row scored
    # (41 rows, several places each)
    assert hits == expected
    assert len(hits) == 10
    assert len(notices) <= 8, notices
