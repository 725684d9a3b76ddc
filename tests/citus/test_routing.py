"""Each hot request of a tenant runs on its tenant's shard: every statement it sends that
reads or writes a distributed table is planned by Citus as one task (tests/citus/explain.py).

The requests are real ones through the API (the Citus run: KINDMEM_TEST_CITUS=1); their
statements are captured as Django sent them and each is EXPLAINed again on the coordinator.
The hot requests: remember (by a key and by an agent's run), list, get, search in every mode,
recall in every mode and a review decision. One statement is let through, by name: the
credential's tenant found by its public prefix (kindmem.row_security._CREDENTIAL_TENANT), which
runs before any tenant is known and reads one indexed row on every shard (deploy/citus.md says
how a token that carries its tenant would end it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import sqlparse
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from kindmem.row_security import _CREDENTIAL_TENANT
from tests.approvals.conftest import remember
from tests.citus.explain import TASK_COUNT, plan
from tests.facts.conftest import participant_scope
from tests.recall.conftest import BOT, recall

pytestmark = pytest.mark.django_db

URL = "/v1/facts"
# Statements that are no query (a transaction's own, a setting) or the credential's lookup.
NOT_QUERIES = re.compile(r"^\s*(SAVEPOINT|RELEASE|ROLLBACK|SET|BEGIN|COMMIT)\b", re.I)
LOOKUPS = tuple(lookup.split("%s")[0] for lookup in _CREDENTIAL_TENANT.values())


def sent_statements(request: Callable[[], Any]) -> tuple[Any, list[str]]:
    """The response of `request()` and every statement it sent that is a query."""
    with CaptureQueriesContext(connection) as captured:
        response = request()
    # a round trip of several statements (compiled.insert, fetch_together) is captured as one
    sent = [one for q in captured.captured_queries for one in sqlparse.split(q["sql"])]
    statements = [sql for sql in sent if not NOT_QUERIES.match(sql) and not sql.startswith(LOOKUPS)]
    return response, statements


def multi_shard(statements: list[str]) -> list[tuple[list[int], str]]:
    """The statements Citus would not run as one task, with their task counts."""
    found = []
    for sql in statements:
        # in a savepoint rolled back: Citus runs a write's subplans to EXPLAIN it
        with transaction.atomic():
            text = plan(sql.replace("%", "%%"))
            transaction.set_rollback(True)
        tasks = [int(n) for n in TASK_COUNT.findall(text)]
        local = "Custom Scan (Citus" not in text  # only reference tables or no table at all
        # a subplan (the audit insert's CTE) is fine where it too runs on one shard
        if not local and (not tasks or set(tasks) != {1}):
            found.append((tasks, sql[:600]))
    return found


@pytest.fixture
def remembered(api, world):
    """A fact of the world's participant, remembered through the API."""
    response = api.post(
        URL,
        {"type": "preference", "content": {"text": "tea"}, "scope": participant_scope(world)},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 201, response.content
    return response.json()["fact"]


def test_remember_runs_on_the_tenants_shard(api, world):
    def remember():
        return api.post(
            URL,
            {"type": "note", "content": {"text": "likes tea"}, "scope": participant_scope(world)},
            format="json",
            **world.admin.headers,
        )

    response, statements = sent_statements(remember)
    assert response.status_code == 201, response.content
    assert statements
    assert multi_shard(statements) == []


def test_list_and_get_run_on_the_tenants_shard(api, world, remembered):
    response, listed = sent_statements(lambda: api.get(URL, **world.admin.headers))
    assert response.status_code == 200
    assert [f["id"] for f in response.json()["facts"]] == [remembered["id"]]
    response, got = sent_statements(
        lambda: api.get(f"{URL}/{remembered['id']}", **world.admin.headers)
    )
    assert response.status_code == 200
    assert multi_shard(listed) == []
    assert multi_shard(got) == []


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_runs_on_the_tenants_shard_in_every_mode(api, world, settings, mode):
    settings.EMBEDDER = "hashing"
    for text in ("tea every morning", "coffee at night"):
        created = api.post(
            URL,
            {"type": "note", "content": {"text": text}, "scope": participant_scope(world)},
            format="json",
            **world.admin.headers,
        )
        assert created.status_code == 201, created.content

    response, statements = sent_statements(
        lambda: api.post(
            f"{URL}/search", {"query": "tea", "mode": mode}, format="json", **world.admin.headers
        )
    )
    assert response.status_code == 200, response.content
    assert response.json()["hits"]
    assert multi_shard(statements) == []


@pytest.mark.parametrize("mode", ["list", "keyword", "semantic", "hybrid"])
def test_recall_runs_on_the_tenants_shard_in_every_mode(
    api, world, hashing_embedder, history, mode
):
    body: dict[str, Any] = {"mode": mode, "selections": BOT, "top_k": 10}
    if mode != "list":
        body["query"] = "refund"
    response, statements = sent_statements(lambda: recall(api, world.admin.headers, **body))
    assert response.status_code == 200, response.content
    assert response.json()["hits"]
    assert multi_shard(statements) == []


def test_an_agents_remember_and_its_review_decision_run_on_the_tenants_shard(
    api, agent_run, reviewer
):
    response, remembered = sent_statements(
        lambda: remember(api, agent_run, text="Always greet her in Spanish.")
    )
    assert response.status_code == 201, response.content
    approval_id = response.json()["approval_id"]
    assert approval_id

    response, decided = sent_statements(
        lambda: api.post(
            f"/v1/approvals/{approval_id}/approve", {}, format="json", **reviewer.key.headers
        )
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    assert multi_shard(remembered) == []
    assert multi_shard(decided) == []
