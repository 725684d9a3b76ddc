"""Rerankers (retrieval/rerank.py): each reorders a pool of candidates by one signal and leaves
the order alone where its signal says nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from retrieval.rerank import (
    MMR,
    RERANKERS,
    Candidate,
    Recency,
    SlotCurrent,
    TrustFirst,
    relevance,
    rerank,
    rerankers_named,
)


def pool(n: int, **fields) -> list[Candidate[str]]:
    return [Candidate(item=f"h{i}", key=i, **fields) for i in range(n)]


def items(candidates) -> list[str]:
    return [c.item for c in candidates]


def test_relevance_falls_with_rank_from_one_to_zero():
    rel = relevance(5)
    assert rel[0] == 1.0
    assert rel[-1] == 0.0
    assert rel == sorted(rel, reverse=True)
    assert relevance(1) == [1.0]
    assert relevance(0) == []


@pytest.mark.parametrize("reranker", list(RERANKERS.values()), ids=list(RERANKERS))
def test_a_reranker_without_its_signal_keeps_the_order_and_cuts_to_top_k(reranker):
    # given: candidates that carry no vector, time, trust or slot
    hits = pool(8)
    # when
    out = reranker.rerank("q", hits, 5)
    # then
    assert items(out) == ["h0", "h1", "h2", "h3", "h4"]


def test_mmr_moves_a_near_duplicate_below_different_hits():
    # given: ten hits that each say something else, but the second repeats the first
    def basis(i: int) -> list[float]:
        return [1.0 if d == i else 0.0 for d in range(10)]

    hits = [Candidate(item=f"h{i}", key=i, vector=basis(i)) for i in range(10)]
    hits[1].vector = [0.99, 0.14] + [0.0] * 8
    # when
    diverse = items(MMR().rerank("q", hits, 10))
    # then: the repeat drops several places, the others keep their order; at lam 1 nothing moves
    assert diverse.index("h1") >= 4
    assert [h for h in diverse if h != "h1"] == [f"h{i}" for i in range(10) if i != 1]
    assert items(MMR(lam=1.0).rerank("q", hits, 10)) == [f"h{i}" for i in range(10)]


def test_recency_lifts_a_much_newer_hit_over_old_ones_of_similar_rank():
    # given: a pool of 20 year-old hits, the third of them said an hour ago
    now = timezone.now()
    hits = pool(20, at=now - timedelta(days=400))
    hits[2].at = now - timedelta(hours=1)
    # when / then: it rises to the top; far down the pool it would rise only a few places
    assert items(Recency().rerank("q", hits, 3)) == ["h2", "h0", "h1"]
    hits[2].at, hits[15].at = hits[0].at, now
    assert items(Recency().rerank("q", hits, 20)).index("h15") == 13  # 2.85 places up


def test_trust_puts_verified_before_unverified_of_similar_rank():
    hits = pool(20, trust="unverified")
    hits[1].trust = "verified"
    assert items(TrustFirst().rerank("q", hits, 2)) == ["h1", "h0"]


def test_trust_does_not_lift_a_verified_hit_from_the_bottom_of_a_long_pool():
    hits = pool(20, trust="unverified")
    hits[-1].trust = "verified"
    assert items(TrustFirst().rerank("q", hits, 10)) == [f"h{i}" for i in range(10)]


def test_slot_keeps_only_the_newest_value_of_a_slot_in_place():
    now = timezone.now()
    hits = [
        Candidate(item="tea (old)", key=1, slot=("preference", "drink"), at=now - timedelta(1)),
        Candidate(item="lives in Porto", key=2),
        Candidate(item="coffee (new)", key=3, slot=("preference", "drink"), at=now),
        Candidate(item="cat", key=4, slot=("pet", "name"), at=now),
    ]
    assert items(SlotCurrent().rerank("q", hits, 4)) == [
        "lives in Porto",
        "coffee (new)",
        "cat",
        "tea (old)",
    ]


def test_rerankers_chain_in_order_over_the_whole_pool_then_cut():
    now = timezone.now()
    hits = pool(4)
    hits[3].at = now
    hits[3].trust = "verified"
    out = rerank("q", hits, 2, rerankers_named(["recency", "trust"]))
    assert len(out) == 2
    assert out[0].item == "h0"


def test_an_unknown_reranker_is_refused():
    with pytest.raises(ValueError, match="unknown reranker"):
        rerankers_named(["cross-encoder"])


def test_settings_know_every_reranker_and_none_is_on_by_default():
    assert settings.RERANK == ()
    assert set(settings.RERANKERS_KNOWN) == set(RERANKERS)
