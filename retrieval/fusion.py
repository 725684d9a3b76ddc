"""Reciprocal rank fusion: the seed's `fuseByRank` (@kindgi/memory `fusion.ts`), line for line.

Every item scores `sum(1 / (k + rank))` over the legs (ranked lists, best first) that found it,
so agreement between legs wins and raw scores (a full-text rank, a cosine similarity) never
need to be compared. Ties keep the order in which items were first seen (the first leg's order,
then the next leg's newcomers); items are matched across legs by `key` and the first leg's copy
is kept. A leg that lists an item twice counts only its first (best) rank.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

RRF_K = 60


@dataclass(frozen=True)
class Hybrid:
    """How hybrid search (facts and recall alike) runs its legs and fuses them.

    Each leg fetches `max(top_k * depth_factor, min_depth)` candidates, then
    `fuse_by_rank(legs, k=k, weights=weights)` orders them. The values are chosen by
    measurement on the development set (bench/retrieval_quality.py --fusion-grid; the figures
    are in bench/README.md), not taken from the seed's k = 60 for all uses.
    """

    depth_factor: int
    min_depth: int
    k: int
    weights: Mapping[str, float]

    def depth(self, top_k: int) -> int:
        return max(top_k * self.depth_factor, self.min_depth)

    def fuse(self, legs: Mapping[str, Sequence[T]], key: Callable[[T], Hashable]) -> list[Fused[T]]:
        return fuse_by_rank(legs, key, k=self.k, weights=self.weights)


# Measured on the development set (bench/README.md, "retrieval_quality.py"): hybrid recall@10
# over depth {10, 20, 30, 50, 100} x k {1, 5, 10, 20, 30, 60, 100} x keyword weight {0.5 .. 2}.
# k decides, depth and weights barely matter: the seed's k = 60 left fact search below its
# better leg (0.850 vs keyword 0.852; on the held-out seed 0.820 vs semantic 0.821), k = 1
# gave 0.913 and 0.889. Keyword and semantic legs find different memories (words vs meaning),
# so the evidence is usually near the top of one leg and absent from the other; a small k
# trusts each leg's first places instead of rewarding middling agreement. Weights other than
# 1 moved recall@10 by at most 0.002 on either seed, so both legs count the same.
# The temporal leg (hybrid recall's third, for a question naming a date: retrieval/temporal.py)
# weighs 4: on the conversation set's tuning split (bench/README.md "Conversation set")
# answerable recall@10 was 0.737 at weight 0.5, 0.760 at 1, 0.779 at 2, 0.785 at 4 (held out:
# 0.754, 0.785, 0.799, 0.808); within the window a question names, what it asks is nearly
# always there, and the other legs rank every similar turn of other weeks beside it.
HYBRID = Hybrid(
    depth_factor=2,
    min_depth=20,
    k=1,
    weights={"keyword": 1.0, "semantic": 1.0, "temporal": 4.0},
)

T = TypeVar("T")


@dataclass(frozen=True)
class Fused(Generic[T]):
    """One fused item: its score and its 1-based rank in each leg that found it."""

    item: T
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def fuse_by_rank(
    legs: Mapping[str, Sequence[T]],
    key: Callable[[T], Hashable],
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused[T]]:
    """Fuse `legs` ({leg name: items best first}) by reciprocal rank, best first. `weights`
    ({leg name: weight}, 1 for a leg not named) scales each leg's `1 / (k + rank)`; without
    them this is the seed's fusion exactly."""
    entries: dict[Hashable, tuple[T, list[float], dict[str, int], int]] = {}
    seen = 0
    for leg, items in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for position, item in enumerate(items):
            ident = key(item)
            rank = position + 1
            entry = entries.get(ident)
            if entry is None:
                entries[ident] = (item, [weight / (k + rank)], {leg: rank}, seen)
                seen += 1
            elif leg not in entry[2]:
                entry[1][0] += weight / (k + rank)
                entry[2][leg] = rank
    ordered = sorted(entries.values(), key=lambda e: (-e[1][0], e[3]))
    return [Fused(item=item, score=score[0], ranks=ranks) for item, score, ranks, _ in ordered]
