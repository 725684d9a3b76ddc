"""What one search and one write cost in SQL statements, pinned (issue 16: a request that
grows a round trip shows here first). Counted as the test client sees them, inside the test's
transaction: the view's transaction is a savepoint here (BEGIN/COMMIT in production, which
are not statements Django logs), and the write throttle's cache table is reached over the
default connection (its own autocommit connection in production)."""

from __future__ import annotations

from typing import Any

import pytest

from facts import services
from tests import factories
from tests.round_trips import listed, round_trips

pytestmark = pytest.mark.django_db


def user_scope(world: Any, user: str) -> dict[str, str]:
    return {"project_id": str(world.project.id), "participant_id": user}


@pytest.fixture
def remembered(world: Any, settings: Any) -> Any:
    """An end user's run, and more of that user's facts than a hybrid leg reads (20), embedded
    by the deterministic stand-in for the model."""
    settings.EMBEDDER = "hashing"
    for i in range(25):
        services.fact_create(
            principal=world.app.principal,
            type="note",
            content=f"likes coffee {i}",
            scope=user_scope(world, "u-1"),
        )
    return factories.run_create(world.app, world.project, participant_id="u-1", thread_id=None)


def search(api: Any, run: Any, mode: str) -> Any:
    return api.post(
        "/v1/facts/search", {"mode": mode, "query": "coffee"}, format="json", **run.headers
    )


# Counted in round trips (`round_trips`). A user-scoped search: one that enters the
# credential's tenant (row security) and, under that wall, reads the run; the leg's query, every
# hit's subjects in it (hybrid: the keyword leg, read while the query is embedded, then the
# semantic leg: one more round trip, hidden behind the embedding); the audit event in one
# statement (its tenant lock and policy, its insert); the tenant cleared when the request ends.
# It runs in autocommit, each statement its own transaction (AuditedView.reads_in_autocommit: it
# writes nothing but its event). Statements that travel together are prepared statements in one
# pipeline (compiled); the HNSW settings are the session's (facts.search.SCAN_SETTINGS).
# (Before issue 16's item 6: 12 and 13, with the tenant apart from the run, the leg's own
# savepoint, the settings, each leg, the subjects and the audit's lock apart; 6 with the view's
# transaction.)
SEARCH_ROUND_TRIPS = {"semantic": 4, "hybrid": 5}


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_user_scoped_search_takes_a_fixed_number_of_round_trips(
    api: Any, world: Any, remembered: Any, mode: str
) -> None:
    # given: a user's facts and a first search of that shape already served
    search(api, remembered, mode)

    # when: the user's run searches
    with round_trips() as trips:
        response = search(api, remembered, mode)

    # then: ten hits, in exactly the round trips above
    assert response.status_code == 200
    assert len(response.json()["hits"]) == 10
    assert len(trips) == SEARCH_ROUND_TRIPS[mode], listed(trips)


# A write by an app key: the view's savepoint; one message that enters the credential's
# tenant and reads the key; the write throttle's log (one upsert); one message with every read
# the write makes before it writes from the request alone (the project of the scope, the key's
# projects (its readers), the type's write and retention policies, the erasure holds); the same
# content already there (dedup); one message with the fact, its revision and subject, then
# the guard's check that the writer may write there and the revision read back as stored (its
# subjects with it: the response); the audit event in one statement; the release; the tenant
# cleared. The
# service takes no savepoint of its own directly in the request's transaction, which a refused
# write rolls back whole (api/transactions.py). (Before issue 16's item 6: 27, with the
# tenant apart from the key, the throttle's read, the cache's size and a savepointed read and
# update of its row, the service's own savepoint and release, the reads before the write and its
# inserts one by one, the subjects and the audit's lock apart; 10 with the read back apart.)
WRITE_ROUND_TRIPS = 9


def test_a_write_takes_a_fixed_number_of_round_trips(api: Any, world: Any, remembered: Any) -> None:
    def write(content: str) -> Any:
        return api.post(
            "/v1/facts",
            {"type": "note", "content": content, "scope": user_scope(world, "u-1")},
            format="json",
            **world.app.headers,
        )

    # given: the app has written through the API before (its key's last use is recent, its
    # throttle counter exists)
    assert write("prefers coffee").status_code == 201

    # when: it writes one more fact for its end user
    with round_trips() as trips:
        response = write("prefers tea")

    # then: created, embedded within its budget, in exactly the round trips above
    assert response.status_code == 201, response.json()
    assert response.json()["fact"]["embedding_state"] == "done"
    assert len(trips) == WRITE_ROUND_TRIPS, listed(trips)


def test_a_supersede_answers_with_the_revision_read_in_its_writes_round_trip(
    api: Any, world: Any, remembered: Any
) -> None:
    # given: an app's fact
    written = api.post(
        "/v1/facts",
        {"type": "note", "content": "prefers coffee", "scope": user_scope(world, "u-1")},
        format="json",
        **world.app.headers,
    ).json()["fact"]

    # when: the app writes its next revision
    with round_trips() as trips:
        response = api.post(
            f"/v1/facts/{written['id']}/supersede",
            {"content": {"drink": "tea", "cups": 2}},
            format="json",
            **world.app.headers,
        )

    # then: the new revision as stored (JSON as the database keeps it) is what it answered,
    # read in the round trip that wrote it: no round trip reads the revision on its own
    assert response.status_code == 201, response.json()
    fact = response.json()["fact"]
    assert fact["version"] == 2
    assert fact == api.get(f"/v1/facts/{written['id']}", **world.app.headers).json()
    alone = [
        trip
        for trip in trips
        if len(trip) == 1
        and trip[0].lstrip().startswith('SELECT "facts_revision"')
        and '"facts_revision"."id" = ' in trip[0]
    ]
    assert alone == [], listed(trips)
