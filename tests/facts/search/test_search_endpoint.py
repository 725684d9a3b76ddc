"""Fact search (`POST /v1/facts/search`): loud failure without an embedder, bad input, the
endpoint's query count, audit and shape, and reranking (retrieval/rerank.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from facts import scopes, services
from facts.models import Revision
from tests.conftest import AUDIT_READ_QUERIES, TENANT_QUERIES
from tests.facts.conftest import Reply
from tests.facts.search.conftest import URL, hit_ids, plant, search

pytestmark = pytest.mark.django_db


# --- loud failure, bad input -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_semantic_search_without_an_embedder_fails_loudly(api, world, settings, mode):
    # given facts, and no embedder configured
    plant(world.tenant, ["coffee every morning"])
    settings.EMBEDDER = "none"
    # when searching by meaning
    response = search(api, world.admin.headers, mode=mode, query="coffee")
    # then 503 embedding-unavailable, never an empty list
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


def test_keyword_search_works_without_an_embedder(api, world, settings):
    plant(world.tenant, ["coffee every morning"])
    settings.EMBEDDER = "none"
    response = search(api, world.admin.headers, mode="keyword", query="coffee")
    assert response.status_code == 200
    assert len(response.json()["hits"]) == 1


def test_an_embedder_that_fails_at_query_time_is_embedding_unavailable(
    api, world, settings, embeddings_server
):
    # given an HTTP embedder that answers 500
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "m"
    settings.EMBEDDER_RETRIES = 0
    embeddings_server.default = lambda payload: Reply(status=500, body={"error": "down"})
    # when searching by meaning
    response = search(api, world.admin.headers, mode="hybrid", query="coffee")
    # then 503 embedding-unavailable
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   \n\t"}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 101}, "top_k"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "limit": 5}, "limit"),
        ({"query": "x", "scope": {"project_id": "nope"}}, "scope"),
        ({"query": 7}, "query"),
        ({}, "query"),
    ],
)
def test_bad_search_input_is_a_validation_error(api, world, body, field):
    response = search(api, world.admin.headers, **body)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert field in response.json()["details"]


def test_search_needs_a_credential(api):
    response = api.post(URL, {"query": "x"}, format="json")
    assert response.status_code == 401


# --- the endpoint: query count, audit, shape ---------------------------------------------------


def test_hybrid_search_takes_a_fixed_number_of_queries_whatever_the_hit_count(
    api, world, django_assert_num_queries
):
    # given many hits, each with subjects
    p = world.admin.principal
    for i in range(15):
        services.fact_create(
            principal=p,
            type="note",
            content=f"coffee fact {i}",
            subjects=[scopes.SubjectInput(kind="external", id=f"x{i}")],
        )
    search(api, world.admin.headers, mode="hybrid", query="coffee")  # warm caches
    # when searching: the key; the keyword leg (while the query is embedded) and the semantic
    # leg's index scan, every row's subjects in its own columns; the exact scan (15 readable
    # rows, fewer than its depth of 30); and the audit event; in autocommit (no savepoint of
    # the view's: AuditedView.reads_in_autocommit)
    # (behind a transaction-mode pooler and on Citus, the semantic leg's scan settings are the
    # request's transaction's: one statement more)
    scan_settings = 1 if settings.TRANSACTION_POOLING else 0
    with django_assert_num_queries(4 + scan_settings + TENANT_QUERIES + AUDIT_READ_QUERIES):
        response = search(api, world.admin.headers, mode="hybrid", query="coffee", top_k=15)
    # then 15 hits, with a query count that does not grow with them
    assert len(response.json()["hits"]) == 15


def test_a_search_records_one_retrieve_audit_event_with_its_hits(api, world):
    from audit.models import AuditEvent

    p = world.admin.principal
    fact = services.fact_create(
        principal=p,
        type="note",
        content="likes hiking",
        scope={"project_id": str(world.project.id), "participant_id": "p9"},
    ).revision
    response = search(api, world.admin.headers, mode="keyword", query="hiking")
    assert response.status_code == 200
    event = AuditEvent.objects.filter(tenant=world.tenant).order_by("-seq").first()
    assert event.phase == "retrieve"
    assert str(fact.fact_id) in event.object_ids
    assert "participant:p9" in event.subjects
    assert event.query_snapshot["mode"] == "keyword"
    assert event.query_snapshot["top_k"] == 10


def test_a_hit_carries_the_facts_api_shape_score_and_ranks(api, world):
    services.fact_create(principal=world.admin.principal, type="note", content="sailing trip")
    response = search(api, world.admin.headers, mode="keyword", query="sailing")
    [hit] = response.json()["hits"]
    assert hit["ranks"] == {"keyword": 1}
    assert hit["score"] > 0
    assert hit["fact"]["content"] == "sailing trip"
    assert hit["fact"]["type"] == "note"
    assert "embedding" not in hit["fact"]


# --- reranking (retrieval/rerank.py), off unless KINDMEM_RERANK names one -------------------------


def test_the_slot_reranker_moves_a_slots_older_value_below_every_other_hit(api, world, settings):
    # given two facts filling one slot (the older written a month ago), and another fact
    [old] = plant(world.tenant, ["drinks green tea every morning"], type="preference", key="drink")
    plant(world.tenant, ["drinks black tea every morning"], type="preference", key="drink")
    plant(world.tenant, ["a tea plantation trip one morning"])
    Revision.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))
    query = {"mode": "keyword", "query": "drinks tea every morning"}
    before = hit_ids(search(api, world.admin.headers, **query))
    # when the slot reranker is on
    settings.RERANK = ("slot",)
    after = hit_ids(search(api, world.admin.headers, **query))
    # then the same hits, the slot's older value last
    assert sorted(after) == sorted(before)
    assert after == [h for h in before if h != str(old.fact_id)] + [str(old.fact_id)]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_reranked_search_returns_top_k_of_a_deeper_pool_in_one_more_query(
    api, world, settings, mode, django_assert_max_num_queries
):
    # given more coffee facts than a page, and every reranker on
    plant(world.tenant, [f"coffee fact number {i}" for i in range(30)])
    settings.RERANK = ("mmr", "recency", "trust", "slot")
    search(api, world.admin.headers, mode=mode, query="coffee fact")  # warm caches
    # when: the legs as without rerankers (see the fixed-count test above), plus the pool's
    # vectors for mmr in one query
    with django_assert_max_num_queries(9 + TENANT_QUERIES + AUDIT_READ_QUERIES):
        response = search(api, world.admin.headers, mode=mode, query="coffee fact", top_k=5)
    # then a page of top_k, no hit twice
    ids = hit_ids(response)
    assert response.status_code == 200
    assert len(ids) == len(set(ids)) == 5
