"""Fact search: keyword, semantic and hybrid retrieval (the seed's `searchByKeyword`,
`searchBySemantic` and `fuseByRank`).

Every leg is one SQL query that starts from what the reader may read: the tenant, the reader
guard (`readable_by`, holds included) and `live()` (current, approved, unexpired), narrowed by
type, scope, tags and `valid_at`, all in its WHERE clause before its LIMIT. A selective guard
therefore never starves a leg: the keyword leg's GIN bitmap is ANDed with the guard, and the
semantic leg runs with pgvector's iterative index scans, so the HNSW scan keeps walking the
graph until it has `limit` readable rows (or the planner takes the exact path through the
btree indexes when the readable set is small).

Semantic and hybrid search without an embedder, or with one that does not answer, fail with
`embedding-unavailable`: an empty list would read as "nothing relevant", which is a lie.

A search may name rerankers (`kindmem.rerank`; `KINDMEM_RERANK`, none by default): its legs
then fetch a deeper pool of candidates, the rerankers reorder it, and the page is cut after.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Value, prefetch_related_objects
from pgvector.django import CosineDistance

from embeddings.providers import embed_query
from facts.models import Revision, RevisionQuerySet
from kindmem.access import Readers
from kindmem.fulltext import keyword_matches
from kindmem.fusion import HYBRID
from kindmem.rerank import Candidate, candidate_pool, rerank, rerankers_named

MODES = ("keyword", "semantic", "hybrid")
KEYWORD = "keyword"
SEMANTIC = "semantic"
MAX_TOP_K = 100
# HNSW candidate list width (pgvector's default is 40). Measured in bench/search.py at 100k
# facts for a reader that filters out half the rows: recall@10 0.93 at 100, 0.94 at 200, 0.99
# at 400, at about the same latency (the scan is not the dominant cost there).
EF_SEARCH = 400
# Iterative scans stop after this many index tuples (pgvector's default is 20 000); past it a
# very selective guard is cheaper to serve exactly, which the planner does via the btrees.
MAX_SCAN_TUPLES = 20_000


@dataclass(frozen=True)
class FactSearch:
    """One search: who reads (tenant and readers), how (mode) and what (query and filters)."""

    tenant_id: uuid.UUID
    readers: Readers
    mode: str
    query: str
    top_k: int = 10
    type: str | None = None
    scope: Mapping[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    valid_at: datetime | None = None
    rerank: Sequence[str] = ()  # kindmem.rerank's names, applied in order

    @cached_property
    def readable(self) -> RevisionQuerySet:
        """`searchable(self)`, built once per search: building the guard is most of the ORM's
        cost of a search, and both hybrid legs start from it (each leg clones it)."""
        return searchable(self)


@dataclass
class SearchHit:
    """The seed's RetrievalHit: a revision, its score and its rank in each leg that found it."""

    revision: Revision
    score: float
    ranks: dict[str, int]


def searchable(search: FactSearch) -> RevisionQuerySet:
    """What every leg searches: the reader's live revisions, narrowed. The guard is a WHERE
    condition of the one query each leg runs, so it applies before the leg's LIMIT."""
    qs = (
        Revision.objects.of_tenant(search.tenant_id)
        .live()
        .readable_by(search.readers)
        .narrowed(type=search.type, scope=dict(search.scope))
    )
    if search.tags:
        qs = qs.filter(fact__tags__contains=sorted(set(search.tags)))
    if search.valid_at is not None:
        qs = qs.valid_at(search.valid_at)
    return qs


def _rendered(qs: RevisionQuerySet) -> RevisionQuerySet:
    # the vector and the tsvector are large and never rendered
    return qs.select_related("fact").defer("embedding", "search_vector", "search_text")


def keyword_leg(search: FactSearch, limit: int) -> list[tuple[Revision, float]]:
    """The best `limit` full-text matches of the query's words (any of them; quoted phrases
    required, `-word` excluded: `kindmem.fulltext`), by BM25 over the readable matches; ties by
    id so that the order is total."""
    rows = keyword_matches(_rendered(search.readable), "search_vector", search.query).order_by(
        "-score", "id"
    )[:limit]
    return [(r, float(r.score)) for r in rows]


def semantic_leg(
    search: FactSearch, limit: int, vector: Sequence[float], model: str
) -> list[tuple[Revision, float]]:
    """The `limit` readable revisions nearest `vector` (cosine), among vectors of `model` only:
    distances across two models' spaces mean nothing. Score: cosine similarity."""
    with transaction.atomic():
        # Per transaction (set_config(..., true) is SET LOCAL): iterative index scans, so that
        # rows the guard filters out do not shrink the page; strict order keeps the ranking
        # exact among what the scan visits.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
                " set_config('hnsw.ef_search', %s, true),"
                " set_config('hnsw.max_scan_tuples', %s, true)",
                [str(EF_SEARCH), str(MAX_SCAN_TUPLES)],
            )
        candidates = (
            _rendered(search.readable)
            .filter(embedding__isnull=False, embedding_model=model)
            .annotate(distance=CosineDistance("embedding", list(vector)))
        )
        rows = list(candidates.order_by("distance", "id")[:limit])
        if len(rows) < limit:
            # Fewer than asked: either the readable set is that small, or the index scan gave
            # up early (`max_scan_tuples`, its memory cap, dead index entries awaiting vacuum).
            # Either way an exact scan of the readable set answers completely, and it is cheap
            # exactly when this happens for the first reason. Ordering by `distance + 0` keeps
            # the HNSW index (which only serves `ORDER BY embedding <=> q`) out of the plan.
            rows = list(candidates.order_by(F("distance") + Value(0.0), "id")[:limit])
    return [(r, 1.0 - float(r.distance)) for r in rows]


def fact_search(*, search: FactSearch) -> list[SearchHit]:
    """The hits of one search, best first, each revision with its fact and subjects loaded.

    `keyword` and `semantic` run one leg; `hybrid` runs both, each `HYBRID.depth(top_k)` deep,
    and fuses them by weighted reciprocal rank (`kindmem.fusion.HYBRID`; ties keep the keyword
    leg's order). A query with no searchable word (stop words only) has an empty keyword leg,
    and hybrid is then the semantic leg's order.
    The query is embedded before any SQL runs, so an embedder failure changes nothing.
    """
    if search.mode not in MODES:
        raise ValueError(f"unknown search mode {search.mode!r}")
    vector: list[float] | None = None
    model = ""
    if search.mode in (SEMANTIC, "hybrid"):
        vector, model = embed_query(search.query)
    return fact_search_embedded(search=search, vector=vector, model=model)


def fact_search_embedded(
    *, search: FactSearch, vector: Sequence[float] | None, model: str
) -> list[SearchHit]:
    """`fact_search` with the query already embedded (`vector` of `model`; None for keyword):
    the SQL part alone, which bench/search.py times."""
    rerankers = rerankers_named(search.rerank)
    page = candidate_pool(search.top_k) if rerankers else search.top_k
    if search.mode == KEYWORD:
        hits = [
            SearchHit(revision=r, score=s, ranks={KEYWORD: i})
            for i, (r, s) in enumerate(keyword_leg(search, page), start=1)
        ]
    elif search.mode == SEMANTIC:
        assert vector is not None
        hits = [
            SearchHit(revision=r, score=s, ranks={SEMANTIC: i})
            for i, (r, s) in enumerate(semantic_leg(search, page, vector, model), start=1)
        ]
    else:
        assert vector is not None
        depth = max(HYBRID.depth(search.top_k), page)
        legs = {
            KEYWORD: [r for r, _ in keyword_leg(search, depth)],
            SEMANTIC: [r for r, _ in semantic_leg(search, depth, vector, model)],
        }
        fused = HYBRID.fuse(legs, key=lambda r: r.pk)[:page]
        hits = [SearchHit(revision=f.item, score=f.score, ranks=dict(f.ranks)) for f in fused]
    if rerankers:
        hits = _reranked(search, hits, rerankers)
    prefetch_related_objects([h.revision for h in hits], "subjects")
    return hits


def _reranked(search: FactSearch, hits: list[SearchHit], rerankers: list) -> list[SearchHit]:
    """The pool reordered by the rerankers, cut to `top_k`. Vectors (deferred by the legs) are
    read in one query, only for a reranker that uses them."""
    vectors: dict[Any, Any] = {}
    if any(r.needs_vectors for r in rerankers) and hits:
        vectors = dict(
            Revision.objects.filter(pk__in=[h.revision.pk for h in hits]).values_list(
                "pk", "embedding"
            )
        )
    candidates = [
        Candidate(
            item=h,
            key=h.revision.pk,
            vector=vectors.get(h.revision.pk),
            at=h.revision.valid_from or h.revision.observed_at or h.revision.created_at,
            trust=h.revision.trust,
            slot=(h.revision.fact.type, h.revision.fact.key) if h.revision.fact.key else None,
        )
        for h in hits
    ]
    return [c.item for c in rerank(search.query, candidates, search.top_k, rerankers)]
