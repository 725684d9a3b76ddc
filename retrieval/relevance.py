"""Saying "nothing relevant" (issue 45): per-leg score floors under which a hit is dropped.

A search that always fills its page answers a question about something never said with ten
unrelated memories, and an agent cannot tell them from an answer. With `abstain` a search drops
every hit whose leg score is under that leg's calibrated floor, and may return nothing; with
`min_relevance` the caller gives the floor of a one-leg mode itself.

The floors compare each leg's own score: BM25 for the keyword leg, cosine similarity for the
semantic leg. Hybrid applies one floor to each leg before it fuses them (a hit that clears
either floor stays), since its fused score is a sum of reciprocal ranks, which says where a hit
stands among the others and nothing of whether it is relevant. `min_relevance` is so refused
for hybrid: one number cannot be a floor on two scales.

The calibrated floors are settings (`RELEVANCE_THRESHOLDS`, keys `corpus.mode[.leg]`), chosen
on the tuning split of the conversation set by bench/relevance_thresholds.py: the highest floor
whose answerable recall@10 drops at most 0.02 (bench/README.md "Conversation set").
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

KEYWORD = "keyword"
SEMANTIC = "semantic"
HYBRID = "hybrid"
CORPORA = ("facts", "recall")
# every key RELEVANCE_THRESHOLDS has (config/settings.py checks an override against these)
KEYS = tuple(
    f"{corpus}.{key}"
    for corpus in CORPORA
    for key in (KEYWORD, SEMANTIC, f"{HYBRID}.{KEYWORD}", f"{HYBRID}.{SEMANTIC}")
)


@dataclass(frozen=True)
class Floors:
    """The lowest leg score a hit may have to stay; None: that leg keeps every hit."""

    keyword: float | None = None
    semantic: float | None = None

    def keeps_keyword(self, score: float) -> bool:
        return self.keyword is None or score >= self.keyword

    def keeps_semantic(self, cosine: float) -> bool:
        return self.semantic is None or cosine >= self.semantic


NO_FLOORS = Floors()


def floors(corpus: str, mode: str, *, abstain: bool, min_relevance: float | None) -> Floors:
    """The floors of one search of `corpus` in `mode`; ValueError for `min_relevance` with
    hybrid (the serializers refuse it first, as a 400)."""
    if min_relevance is not None:
        if mode == KEYWORD:
            return Floors(keyword=min_relevance)
        if mode == SEMANTIC:
            return Floors(semantic=min_relevance)
        raise ValueError("min_relevance applies to the keyword and semantic modes; use abstain")
    if not abstain or mode not in (KEYWORD, SEMANTIC, HYBRID):
        return NO_FLOORS
    thresholds = settings.RELEVANCE_THRESHOLDS
    if mode == HYBRID:
        return Floors(
            keyword=thresholds[f"{corpus}.{HYBRID}.{KEYWORD}"],
            semantic=thresholds[f"{corpus}.{HYBRID}.{SEMANTIC}"],
        )
    if mode == KEYWORD:
        return Floors(keyword=thresholds[f"{corpus}.{KEYWORD}"])
    return Floors(semantic=thresholds[f"{corpus}.{SEMANTIC}"])
