"""Fact search (`POST /v1/facts/search`): the guard holds in every leg, each in its SQL
before its LIMIT, and each leg and their fusion return exactly the reference's readable top k."""

from __future__ import annotations

import math
import os
import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from facts.models import EmbeddingState, Fact, Revision, Subject
from facts.search import FactSearch, keyword_leg, semantic_leg
from kindmem.access import readers_for
from kindmem.models import ErasureHold
from retrieval.fulltext import KeywordQuery
from retrieval.fusion import HYBRID, fuse_by_rank
from tests import factories
from tests.facts.search.conftest import HASHING, hit_ids, plant, search
from tests.facts.test_access import Containers, cases, containers, reference  # noqa: F401

pytestmark = pytest.mark.django_db


# --- the guard holds in every leg --------------------------------------------------------------


def test_a_reader_gets_its_own_top_k_in_every_mode_despite_thousands_of_closer_foreign_facts(
    api, world, other_world
):
    # given a run for participant p1 with 30 facts of its own mentioning espresso coffee
    run = factories.run_create(world.app, world.project, participant_id="p1", thread_id=None)
    scope = {"org": world.org, "project": world.project, "participant_id": "p1"}
    own = plant(world.tenant, [f"p1 note {i} mentions espresso coffee" for i in range(30)], **scope)
    # and thousands of facts nearer the query, and better keyword matches: in another tenant,
    # and for another participant of the same project
    closer = [f"espresso coffee espresso coffee {i}" for i in range(1000)]
    plant(other_world.tenant, closer, org=other_world.org, project=other_world.project)
    plant(world.tenant, closer, org=world.org, project=world.project, participant_id="p2")
    for mode in ("keyword", "semantic", "hybrid"):
        # when the run searches
        response = search(api, run.headers, mode=mode, query="espresso coffee", top_k=10)
        # then it gets ten hits, all its own, none of theirs
        assert response.status_code == 200, response.json()
        ids = hit_ids(response)
        assert len(ids) == 10, mode
        assert set(ids) <= {str(r.fact_id) for r in own}, mode


def test_a_search_never_returns_another_tenants_fact_even_to_its_admin(api, world, other_world):
    # given a fact in another tenant that matches exactly
    plant(other_world.tenant, ["the secret launch date"])
    # when this tenant's admin searches in every mode
    for mode in ("keyword", "semantic", "hybrid"):
        response = search(api, world.admin.headers, mode=mode, query="the secret launch date")
        # then nothing is found
        assert response.status_code == 200
        assert response.json()["hits"] == []


WORDS = ["coffee", "tea", "dog", "cat", "paris", "rome"]


def lexemes(*texts: str) -> list[frozenset[str]]:
    """Each text's lexemes under the search configuration (PostgreSQL's stemming, not ours)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.i, coalesce(array_agg(u.lexeme) FILTER (WHERE u.lexeme IS NOT NULL), '{}')"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS t(text, i)"
            " LEFT JOIN LATERAL unnest(to_tsvector('english', t.text)) AS u ON true"
            " GROUP BY t.i ORDER BY t.i",
            [list(texts)],
        )
        return [frozenset(row[1]) for row in cursor.fetchall()]


def bm25_reference(docs: dict[Any, frozenset[str]], words: list[frozenset[str]]) -> list[Any]:
    """The keyword leg's ranking, written out in Python: the docs having any query word (a
    word's lexemes all present), by BM25 with each word counted once, document frequencies
    and average length over those docs; ties by id."""
    from retrieval.fulltext import BM25_B, BM25_K1

    matched = {i: d for i, d in docs.items() if any(w and w <= d for w in words)}
    if not matched:
        return []
    n = len(matched)
    avg = sum(len(d) for d in matched.values()) / n
    df = [sum(1 for d in matched.values() if w and w <= d) for w in words]

    def score(d: frozenset[str]) -> float:
        total = 0.0
        for w, f in zip(words, df, strict=True):
            if w and w <= d:
                total += math.log(1 + (n - f + 0.5) / (f + 0.5))
        return total * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(d) / avg))

    return sorted(matched, key=lambda i: (-score(matched[i]), i))


def exact_semantic(tenant_id: uuid.UUID, vector: list[float]) -> list[uuid.UUID]:
    """The tenant's live vectors by exact cosine distance (no index), with no guard."""
    from pgvector.django import CosineDistance

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
        return list(
            Revision.objects.of_tenant(tenant_id)
            .live()
            .filter(embedding_model=HASHING.model)
            .annotate(d=CosineDistance("embedding", vector))
            .order_by("d", "id")
            .values_list("id", flat=True)
        )


class Rollback(Exception):
    pass


@hypothesis_settings(
    max_examples=int(os.environ.get("KINDMEM_SEARCH_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_each_leg_returns_exactly_the_readable_top_k_of_the_reference(
    containers: Containers,  # noqa: F811
    data: st.DataObject,
) -> None:
    c = containers
    facts, many_readers, held = data.draw(cases(c))
    texts = data.draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
            min_size=len(facts),
            max_size=len(facts),
        )
    )
    query = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" or ".join))
    top_k = data.draw(st.integers(1, 5))
    try:
        with transaction.atomic():
            # given generated facts with generated texts, and erasure holds
            made = Fact.objects.bulk_create(
                Fact(tenant=c.tenant, type="note", **scope) for scope, _ in facts
            )
            revisions = Revision.objects.bulk_create(
                Revision(
                    tenant=c.tenant,
                    fact=fact,
                    version=1,
                    content=text,
                    content_hash=text,
                    attributed_kind="service",
                    attributed_id="t",
                    search_text=text,
                    embedding=vector,
                    embedding_model=HASHING.model,
                    embedding_state=EmbeddingState.DONE,
                )
                for fact, text, vector in zip(made, texts, HASHING.embed(texts), strict=True)
            )
            Subject.objects.bulk_create(
                Subject(tenant=c.tenant, revision=rev, fact=rev.fact, kind=k, subject_id=i)
                for rev, (_, subj) in zip(revisions, facts, strict=True)
                for k, i in subj
            )
            ErasureHold.objects.bulk_create(
                ErasureHold(tenant=c.tenant, subject_kind=k, subject_id=i, erasure_id=uuid.uuid4())
                for k, i in held
            )
            by_id = {
                rev.id: (scope, subj) for rev, (scope, subj) in zip(revisions, facts, strict=True)
            }
            [vector] = HASHING.embed([query])
            semantic_all = exact_semantic(c.tenant.id, vector)
            words = list(dict.fromkeys(lexemes(*KeywordQuery.parse(query).words)))
            text_lexemes = dict(zip([r.id for r in revisions], lexemes(*texts), strict=True))
            for r in many_readers:
                readable = {
                    rid for rid, (scope, subj) in by_id.items() if reference(scope, subj, held, r)
                }
                s = FactSearch(tenant_id=c.tenant.id, readers=r, mode="keyword", query=query)
                # when each leg runs for this reader
                kw = [rev.id for rev, _ in keyword_leg(s, top_k)]
                sem = [rev.id for rev, _ in semantic_leg(s, top_k, vector, HASHING.model)]
                # then each is the reference's readable top-k, in the exact order (the keyword
                # ranking's frequencies are over what this reader may read, nothing else)
                assert set(kw) <= readable
                assert set(sem) <= readable
                keyword_all = bm25_reference({i: text_lexemes[i] for i in readable}, words)
                assert kw == keyword_all[:top_k]
                assert sem == [i for i in semantic_all if i in readable][:top_k]
            raise Rollback
    except Rollback:
        pass


def test_hybrid_is_the_reference_fusion_of_the_two_legs(api, world):
    # given facts where the keyword and semantic orders differ
    scope = {"org": world.org, "project": world.project}
    plant(
        world.tenant,
        [
            "coffee coffee coffee",
            "morning coffee with milk",
            "tea in the morning",
            "black coffee and a morning walk",
            "dogs like walks",
            "coffee",
        ],
        **scope,
    )
    query = "morning coffee"
    search_in = FactSearch(
        tenant_id=world.tenant.id,
        readers=readers_for(world.app.principal),
        mode="hybrid",
        query=query,
        top_k=4,
    )
    # when hybrid search runs through the API
    response = search(api, world.app.headers, mode="hybrid", query=query, top_k=4)
    # then it equals the weighted fusion over the two legs' lists, each as deep as HYBRID says,
    # cut to top_k
    [vector] = HASHING.embed([query])
    depth = HYBRID.depth(4)
    legs = {
        "keyword": [r for r, _ in keyword_leg(search_in, depth)],
        "semantic": [r for r, _ in semantic_leg(search_in, depth, vector, HASHING.model)],
    }
    expected = fuse_by_rank(legs, key=lambda r: r.pk, k=HYBRID.k, weights=HYBRID.weights)[:4]
    hits = response.json()["hits"]
    assert [h["fact"]["revision_id"] for h in hits] == [str(f.item.pk) for f in expected]
    assert [h["ranks"] for h in hits] == [f.ranks for f in expected]
    assert [h["score"] for h in hits] == pytest.approx([f.score for f in expected])
    assert any(len(h["ranks"]) == 2 for h in hits)
