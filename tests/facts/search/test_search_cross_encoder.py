"""The operator's cross-encoder (retrieval/cross_encoder.py) behind a real local `/rerank`
server (tests/extraction/chat_server.py answers any POST from its script): it reorders fact
search and recall when it answers, and when it is slow, down or answers nonsense the search
answers in its own order with `"reranker": "skipped"`, never a 500."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.extraction.chat_server import Reply, chat_server_running
from tests.facts.search.conftest import hit_ids, plant, search
from tests.recall.conftest import BOT, conversation_create, recall, texts

pytestmark = pytest.mark.django_db

QUERY = "coffee"
TEXTS = ["coffee beans", "coffee grinder", "coffee cup"]


@pytest.fixture
def reranker(settings: Any):
    with chat_server_running() as server:
        settings.RERANKER_URL = f"{server.url}/v1/rerank"
        settings.RERANKER_MODEL = "fake-reranker"
        settings.RERANKER_BUDGET_MS = 500
        yield server


def last_first(payload: dict[str, Any]) -> Reply:
    """Cohere/Jina's shape: the last document is the most relevant, the first the least."""
    n = len(payload["documents"])
    return Reply(body={"results": [{"index": i, "relevance_score": i / n} for i in range(n)]})


def test_an_answering_reranker_reorders_the_hits(api, world, reranker):
    revisions = plant(world.tenant, TEXTS)
    plain = search(api, world.admin.headers, mode="keyword", query=QUERY, top_k=3)
    reranker.default = last_first
    response = search(api, world.admin.headers, mode="keyword", query=QUERY, top_k=2)
    assert response.status_code == 200
    assert response.json()["reranker"] == "applied"
    # the search's own order, reversed by the scores, cut to top_k
    assert hit_ids(response) == hit_ids(plain)[::-1][:2]
    sent = reranker.requests[-1]
    assert sent["json"]["query"] == QUERY
    assert sorted(sent["json"]["documents"]) == sorted(TEXTS)
    assert sent["json"]["model"] == "fake-reranker"
    assert {str(r.fact_id) for r in revisions} >= set(hit_ids(response))


def test_the_tei_shape_is_understood(api, world, reranker):
    plant(world.tenant, TEXTS)
    plain = search(api, world.admin.headers, mode="keyword", query=QUERY)
    reranker.default = lambda payload: Reply(
        body=[{"index": i, "score": float(i)} for i in range(len(payload["texts"]))]
    )
    response = search(api, world.admin.headers, mode="keyword", query=QUERY)
    assert response.json()["reranker"] == "applied"
    assert hit_ids(response) == hit_ids(plain)[::-1]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body={"results": []}, delay_seconds=1.5),  # slower than the budget
        Reply(status=503, body={"error": "loading"}),
        Reply(body={"results": [{"index": 9, "relevance_score": 1.0}]}),
        Reply(raw=b"not json"),
    ],
    ids=["slow", "5xx", "bad-index", "not-json"],
)
def test_a_slow_or_failing_reranker_is_skipped_and_said_so(api, world, reranker, reply):
    plant(world.tenant, TEXTS)
    plain = search(api, world.admin.headers, mode="keyword", query=QUERY)
    reranker.default = lambda payload: reply
    response = search(api, world.admin.headers, mode="keyword", query=QUERY)
    assert response.status_code == 200
    assert response.json()["reranker"] == "skipped"
    assert hit_ids(response) == hit_ids(plain)


def test_a_reranker_that_is_down_is_skipped(api, world, settings):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.RERANKER_URL = f"http://127.0.0.1:{port}/rerank"
    plant(world.tenant, TEXTS)
    response = search(api, world.admin.headers, mode="hybrid", query=QUERY)
    assert response.status_code == 200
    assert response.json()["reranker"] == "skipped"
    assert len(hit_ids(response)) == 3


def test_without_a_reranker_the_answer_has_no_flag(api, world):
    plant(world.tenant, TEXTS)
    response = search(api, world.admin.headers, mode="keyword", query=QUERY)
    assert "reranker" not in response.json()


def test_recall_is_reranked_and_skipped_alike(api, world, reranker):
    conversation_create(world, "c1", *[("user", t) for t in TEXTS])
    plain = recall(api, world.app.headers, selections=BOT, mode="keyword", query=QUERY)
    reranker.default = last_first
    reordered = recall(api, world.app.headers, selections=BOT, mode="keyword", query=QUERY)
    assert reordered.json()["reranker"] == "applied"
    assert texts(reordered) == texts(plain)[::-1]
    reranker.default = lambda payload: Reply(status=500, body={})
    skipped = recall(api, world.app.headers, selections=BOT, mode="keyword", query=QUERY)
    assert skipped.json()["reranker"] == "skipped"
    assert texts(skipped) == texts(plain)
    # a list has no query to rerank by
    listed = recall(api, world.app.headers, selections=BOT, mode="list")
    assert "reranker" not in listed.json()


def test_capabilities_report_the_reranker(api, world, reranker):
    body = api.get("/v1/capabilities", **world.admin.headers).json()
    assert body["cross_encoder"] == {
        "configured": True,
        "model": "fake-reranker",
        "candidates": 30,
        "budget_ms": 500,
    }
    assert body["relevance_floors"]["recall.semantic"] == pytest.approx(-1.0)
