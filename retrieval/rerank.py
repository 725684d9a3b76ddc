"""Reranking: a second pass over a search's candidates, after retrieval and fusion, before the
page is cut to `top_k`. Facts and recall alike (each adapts its hits to `Candidate`).

A reranker is anything with `rerank(query, hits, top_k)`: it takes the candidates best first
and returns at most `top_k` of them, best first. Those here need no model, only what a hit
already carries:

- `mmr`: maximal marginal relevance, for diversity: each next pick trades its relevance
  against its nearest cosine to what was already picked, so near-duplicates do not crowd the
  page.
- `recency`: newer first among the similarly relevant (an exponential decay with a half-life).
- `trust`: verified before asserted before unverified among the similarly relevant.
- `slot`: the slot's current value: of several hits filling one slot (a fact's type and key),
  the newest keeps its place and the older ones drop below every other hit.

Relevance is the hit's position in the pool it came in (1 for the first, falling evenly to 0
for the last), not its raw score: keyword, semantic and hybrid scores live on different scales,
positions do not. A bonus of weight w can so lift a hit by up to w * pool size places.

None is on by default (`KINDMEM_RERANK`): each is measured on the development set by
bench/retrieval_quality.py --rerank, and kept off while it does not help (bench/README.md).
No cross-encoder: no maintained pip package ships cross-encoder weights that load offline, and
kindmem never downloads a model at run time.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from django.utils import timezone

T = TypeVar("T")

# Higher is more trusted (facts' Trust values); recall's messages carry none.
TRUST_ORDER = {"verified": 1.0, "asserted": 0.5, "unverified": 0.0}


@dataclass
class Candidate(Generic[T]):
    """One hit as rerankers see it: the search's own hit (`item`) and the signals it carries."""

    item: T
    key: Hashable
    vector: Sequence[float] | None = None
    at: datetime | None = None  # when it was true or said: valid_from, observed_at, created_at
    trust: str | None = None
    slot: Hashable | None = None  # (type, key) of a fact that fills a slot


class Reranker(Protocol):
    name: str
    needs_vectors: bool

    def rerank(
        self, query: str, hits: Sequence[Candidate[T]], top_k: int
    ) -> list[Candidate[T]]: ...


def relevance(count: int) -> list[float]:
    """Position-based relevance of `count` candidates best first: 1 falling evenly to 0."""
    if count <= 1:
        return [1.0] * count
    return [1.0 - r / (count - 1) for r in range(count)]


def _blend(
    hits: Sequence[Candidate[T]], top_k: int, bonus: Sequence[float], weight: float
) -> list[Candidate[T]]:
    """Reorder by relevance + weight * bonus (each bonus in [0, 1]); ties keep the given order."""
    rel = relevance(len(hits))
    order = sorted(range(len(hits)), key=lambda i: (-(rel[i] + weight * bonus[i]), i))
    return [hits[i] for i in order[:top_k]]


@dataclass(frozen=True)
class MMR:
    """Maximal marginal relevance: pick by `lam * relevance - (1 - lam) * max cosine to the
    picks so far`. A candidate without a vector counts as like nothing."""

    lam: float = 0.7
    name: str = "mmr"
    needs_vectors: bool = True

    def rerank(self, query: str, hits: Sequence[Candidate[T]], top_k: int) -> list[Candidate[T]]:
        import numpy as np  # pgvector's own dependency; one matrix product, not a Python loop

        rel = relevance(len(hits))
        width = next((len(h.vector) for h in hits if h.vector is not None), 0)
        units = np.zeros((len(hits), width))
        for position, hit in enumerate(hits):
            if hit.vector is not None:
                vector = np.asarray(hit.vector, dtype=float)
                norm = np.linalg.norm(vector)
                units[position] = vector / norm if norm else 0.0
        similar = units @ units.T  # a row of zeros for a hit without a vector: like nothing
        left = list(range(len(hits)))
        picked: list[int] = []
        nearest = np.zeros(len(hits))  # each candidate's highest cosine to a pick
        while left and len(picked) < top_k:
            best = max(left, key=lambda i: (self.lam * rel[i] - (1 - self.lam) * nearest[i], -i))
            picked.append(best)
            left.remove(best)
            nearest = np.maximum(nearest, similar[best])
        return [hits[i] for i in picked]


@dataclass(frozen=True)
class Recency:
    """relevance + weight * 2^(-age / half_life): among hits of similar rank the newer first.
    A hit without a time gets no bonus."""

    weight: float = 0.15  # up to 3 places in a pool of 20
    half_life_days: float = 30.0
    name: str = "recency"
    needs_vectors: bool = False

    def rerank(self, query: str, hits: Sequence[Candidate[T]], top_k: int) -> list[Candidate[T]]:
        now = timezone.now()
        bonus = [
            0.0
            if h.at is None
            else math.pow(
                2.0, -max((now - h.at).total_seconds(), 0.0) / 86400 / self.half_life_days
            )
            for h in hits
        ]
        return _blend(hits, top_k, bonus, self.weight)


@dataclass(frozen=True)
class TrustFirst:
    """relevance + weight * trust (verified 1, asserted 0.5, unverified 0)."""

    weight: float = 0.15
    name: str = "trust"
    needs_vectors: bool = False

    def rerank(self, query: str, hits: Sequence[Candidate[T]], top_k: int) -> list[Candidate[T]]:
        bonus = [TRUST_ORDER.get(h.trust or "", 0.0) for h in hits]
        return _blend(hits, top_k, bonus, self.weight)


@dataclass(frozen=True)
class SlotCurrent:
    """Of the hits that fill one slot, the newest (`at`) keeps its place; the older ones follow
    every other hit, in their order. Hits that fill no slot are left alone."""

    name: str = "slot"
    needs_vectors: bool = False

    def rerank(self, query: str, hits: Sequence[Candidate[T]], top_k: int) -> list[Candidate[T]]:
        newest: dict[Hashable, int] = {}
        for position, hit in enumerate(hits):
            if hit.slot is None:
                continue
            newest_position = newest.get(hit.slot)
            if newest_position is None or _later(hit.at, hits[newest_position].at):
                newest[hit.slot] = position
        keep = [h for i, h in enumerate(hits) if h.slot is None or newest[h.slot] == i]
        older = [h for i, h in enumerate(hits) if h.slot is not None and newest[h.slot] != i]
        return (keep + older)[:top_k]


def _later(at: datetime | None, newest_at: datetime | None) -> bool:
    return at is not None and (newest_at is None or at > newest_at)


RERANKERS: Mapping[str, Any] = {r.name: r for r in (MMR(), Recency(), TrustFirst(), SlotCurrent())}


def rerankers_named(names: Sequence[str]) -> list[Reranker]:
    """The rerankers of `names`, in that order; ValueError for an unknown one."""
    unknown = [n for n in names if n not in RERANKERS]
    if unknown:
        raise ValueError(f"unknown reranker(s) {unknown}; known: {sorted(RERANKERS)}")
    return [RERANKERS[n] for n in names]


def candidate_pool(top_k: int) -> int:
    """How many candidates a reranked search hands its rerankers for a page of `top_k`."""
    return max(2 * top_k, 20)


def rerank(
    query: str, hits: Sequence[Candidate[T]], top_k: int, rerankers: Sequence[Reranker]
) -> list[Candidate[T]]:
    """Each reranker in turn over the whole pool; the page is cut to `top_k` at the end."""
    out = list(hits)
    for reranker in rerankers:
        out = reranker.rerank(query, out, len(out))
    return out[:top_k]
