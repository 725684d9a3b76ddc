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

T = TypeVar("T")


@dataclass(frozen=True)
class Fused(Generic[T]):
    """One fused item: its score and its 1-based rank in each leg that found it."""

    item: T
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def fuse_by_rank(
    legs: Mapping[str, Sequence[T]], key: Callable[[T], Hashable], k: int = RRF_K
) -> list[Fused[T]]:
    """Fuse `legs` ({leg name: items best first}) by reciprocal rank, best first."""
    entries: dict[Hashable, tuple[T, list[float], dict[str, int], int]] = {}
    seen = 0
    for leg, items in legs.items():
        for i, item in enumerate(items):
            ident = key(item)
            rank = i + 1
            entry = entries.get(ident)
            if entry is None:
                entries[ident] = (item, [1 / (k + rank)], {leg: rank}, seen)
                seen += 1
            elif leg not in entry[2]:
                entry[1][0] += 1 / (k + rank)
                entry[2][leg] = rank
    ordered = sorted(entries.values(), key=lambda e: (-e[1][0], e[3]))
    return [Fused(item=item, score=score[0], ranks=ranks) for item, score, ranks, _ in ordered]
