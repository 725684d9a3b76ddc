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

A search may name rerankers (`retrieval.rerank`; `KINDMEM_RERANK`, none by default): its legs
then fetch a deeper pool of candidates, the rerankers reorder it, and the page is cut after.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection as db_connection
from django.db.models import F, QuerySet, Value
from django.utils import timezone
from pgvector import Vector
from pgvector.django import CosineDistance

from api.tracing import memory_operation
from compiled import Row, compiled, fetch_together
from embeddings.budget import embedding_pool
from embeddings.hnsw import hnsw_settings
from embeddings.providers import embed_query
from facts.models import Revision, RevisionQuerySet, attach_subjects, subject_rows
from kindmem.access import Readers
from kindmem.guards import narrowing
from retrieval.fulltext import KeywordQuery, keyword_matches
from retrieval.fusion import HYBRID
from retrieval.relevance import Floors, floors
from retrieval.rerank import Candidate, candidate_pool, rerank, rerankers_named

MODES = ("keyword", "semantic", "hybrid")
KEYWORD = "keyword"
SEMANTIC = "semantic"
HYBRID_MODE = "hybrid"
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
    """One search: who reads (tenant and readers, and the readers the caller narrowed them to:
    `kindmem.guards`), how (mode) and what (query and filters)."""

    tenant_id: uuid.UUID
    readers: Readers
    mode: str
    query: str
    top_k: int = 10
    type: str | None = None
    scope: Mapping[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    valid_at: datetime | None = None
    rerank: Sequence[str] = ()  # retrieval.rerank's names, applied in order
    narrowed_to: Readers | None = None
    # drop hits under the calibrated floors, or under the caller's (`retrieval.relevance`)
    abstain: bool = False
    min_relevance: float | None = None

    @property
    def floors(self) -> Floors:
        return floors("facts", self.mode, abstain=self.abstain, min_relevance=self.min_relevance)

    @property
    def whole_tenant(self) -> bool:
        """Whether every live fact of the tenant is readable: no guard, no narrowing."""
        return self.readers.all and narrowing(self.readers, self.narrowed_to) is None


@dataclass
class SearchHit:
    """The seed's RetrievalHit: a revision, its score and its rank in each leg that found it."""

    revision: Revision
    score: float
    ranks: dict[str, int]


def searchable(search: FactSearch, now: datetime | None = None) -> RevisionQuerySet:
    """What every leg searches: the reader's live revisions (at `now`), narrowed. The guard is
    a WHERE condition of the one query each leg runs, so it applies before the leg's LIMIT."""
    qs = (
        Revision.objects.of_tenant(search.tenant_id)
        .live(now)
        .readable_by(search.readers, narrowed_to=search.narrowed_to)
        .narrowed(type=search.type, scope=dict(search.scope))
    )
    if search.tags:
        qs = qs.filter(fact__tags__contains=sorted(set(search.tags)))
    if search.valid_at is not None:
        qs = qs.valid_at(search.valid_at)
    return qs


def _rendered(qs: RevisionQuerySet, tenant_id: uuid.UUID) -> RevisionQuerySet:
    # the vector and the tsvector are large and never rendered; the subjects are
    return (
        qs.select_related("fact")
        .defer("embedding", "search_vector", "search_text")
        .annotate(subject_rows=subject_rows(tenant_id))
    )


# Each leg's query is built by the ORM once per shape of its inputs (the reader's kind, the
# filters given, the depth) and reused with each search's values (compiled): building
# and compiling the guard, the holds and BM25 cost several times what running them does. Its
# rows come back as `Row`s: hybrid search makes models of the ones it returns only.
@dataclass(frozen=True)
class _LegInputs:
    """Everything a leg's SQL is built from; the rest of its SQL is fixed."""

    search: FactSearch
    now: datetime
    words: KeywordQuery | None = None
    vector: Vector | None = None
    model: str = ""


def _search_inputs(search: FactSearch) -> FactSearch:
    # only what the legs' SQL reads; the text, the mode and top_k reach it by other ways
    return FactSearch(
        tenant_id=search.tenant_id,
        readers=search.readers,
        mode="",
        query="",
        type=search.type,
        scope=dict(search.scope),
        tags=tuple(sorted(set(search.tags))),
        valid_at=search.valid_at,
        narrowed_to=narrowing(search.readers, search.narrowed_to),
    )


@compiled(lazy=True)
def _keyword_query(inputs: _LegInputs, limit: int) -> QuerySet[Any]:
    assert inputs.words is not None
    readable = _rendered(searchable(inputs.search, inputs.now), inputs.search.tenant_id)
    ranked = keyword_matches(
        readable, "search_vector", inputs.words, bounded=inputs.search.whole_tenant
    )
    return ranked.order_by("-score", "id")[:limit]


def _semantic_candidates(inputs: _LegInputs) -> QuerySet[Any]:
    return (
        _rendered(searchable(inputs.search, inputs.now), inputs.search.tenant_id)
        .filter(embedding__isnull=False, embedding_model=inputs.model)
        .annotate(distance=CosineDistance("embedding", inputs.vector))
    )


@compiled(lazy=True)
def _semantic_query(inputs: _LegInputs, limit: int) -> QuerySet[Any]:
    return _semantic_candidates(inputs).order_by("distance", "id")[:limit]


@compiled(lazy=True)
def _exact_query(inputs: _LegInputs, limit: int) -> QuerySet[Any]:
    # Ordering by `distance + 0` keeps the HNSW index (which only serves
    # `ORDER BY embedding <=> q`) out of the plan.
    return _semantic_candidates(inputs).order_by(F("distance") + Value(0.0), "id")[:limit]


# The scan settings (embeddings.hnsw) are the session's, set once when a connection opens
# (`apply_scan_settings`, connected in facts/apps.py): sent with each query, they made it a
# message of two statements, which cannot be a prepared statement (compiled), and they
# harm no other query (only a semantic leg scans an HNSW index; recall sets its own per
# transaction, which override these while it lasts).
SCAN_SETTINGS = hnsw_settings(EF_SEARCH, MAX_SCAN_TUPLES, local=False)


# Pooled connections whose session has them: Django "creates" one at every checkout.
_scan_ready: weakref.WeakSet[Any] = weakref.WeakSet()


def apply_scan_settings(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created`'s receiver: the semantic leg's scan settings for the session (once
    per connection; behind a transaction-mode pooler, per transaction instead: `_legs`)."""
    if settings.TRANSACTION_POOLING or connection.connection in _scan_ready:
        return
    with connection.cursor() as cursor:
        cursor.execute(*SCAN_SETTINGS)
    if connection.pool:  # handed out in autocommit: the settings above have committed
        _scan_ready.add(connection.connection)


def _keyword_inputs(search: FactSearch, now: datetime) -> _LegInputs | None:
    """The keyword leg's inputs; None when the text has nothing to search with (no query)."""
    words = KeywordQuery.parse(search.query)
    if words.match() is None:
        return None
    return _LegInputs(search=_search_inputs(search), now=now, words=words)


def _semantic_inputs(
    search: FactSearch, vector: Sequence[float], model: str, now: datetime
) -> _LegInputs:
    return _LegInputs(
        search=_search_inputs(search), now=now, vector=Vector(list(vector)), model=model
    )


def _legs(
    keyword: _LegInputs | None, semantic: _LegInputs | None, limit: int
) -> tuple[list[Row], list[Row]]:
    """The keyword and the semantic leg's `limit` best rows (either leg may be None: not run),
    their queries sent in one round trip."""
    queries = ([_keyword_query(keyword, limit)] if keyword else []) + (
        [_semantic_query(semantic, limit)] if semantic else []
    )
    if semantic and settings.TRANSACTION_POOLING:  # the request's transaction (apply_scan_settings)
        with db_connection.cursor() as cursor:
            cursor.execute(*hnsw_settings(EF_SEARCH, MAX_SCAN_TUPLES))
    found = fetch_together(*queries)
    keyword_rows = found.pop(0) if keyword else []
    semantic_rows = found.pop(0) if semantic else []
    if semantic:
        semantic_rows = _completed(semantic, semantic_rows, limit)
    return keyword_rows, semantic_rows


def _completed(semantic: _LegInputs, rows: list[Row], limit: int) -> list[Row]:
    """The semantic leg's rows, complete: fewer than asked means either the readable set is
    that small, or the index scan gave up early (`max_scan_tuples`, its memory cap, dead index
    entries awaiting vacuum). Either way an exact scan of the readable set answers completely,
    and it is cheap exactly when this happens for the first reason. It needs no HNSW settings:
    it uses no HNSW."""
    if len(rows) >= limit:
        return rows
    return _exact_query(semantic, limit).all()


def _scored(rows: list[Row], score: str) -> list[tuple[Revision, float]]:
    revisions = [r.model() for r in rows]
    if score == "distance":
        return [(r, 1.0 - float(r.distance)) for r in revisions]
    return [(r, float(r.score)) for r in revisions]


def keyword_leg(
    search: FactSearch, limit: int, now: datetime | None = None
) -> list[tuple[Revision, float]]:
    """The best `limit` full-text matches of the query's words (any of them; quoted phrases
    required, `-word` excluded: `retrieval.fulltext`), by BM25 over the readable matches (live
    at `now`, or now); ties by id so that the order is total."""
    inputs = _keyword_inputs(search, now or timezone.now())
    return _scored(_legs(inputs, None, limit)[0], "score") if inputs else []


def semantic_leg(
    search: FactSearch,
    limit: int,
    vector: Sequence[float],
    model: str,
    now: datetime | None = None,
) -> list[tuple[Revision, float]]:
    """The `limit` readable revisions (live at `now`, or now) nearest `vector` (cosine), among
    vectors of `model` only: distances across two models' spaces mean nothing. Score: cosine
    similarity."""
    inputs = _semantic_inputs(search, vector, model, now or timezone.now())
    return _scored(_legs(None, inputs, limit)[1], "distance")


@memory_operation(
    "search",
    before=lambda search: {
        "gen_ai.operation.name": "search_memory",
        "kindmem.memory.kind": "fact",
        "kindmem.search.mode": search.mode,
        "kindmem.search.top_k": search.top_k,
        "kindmem.memory.type": search.type,
    },
    after=lambda hits: {"gen_ai.memory.search.result.count": len(hits)},
)
def fact_search(*, search: FactSearch) -> list[SearchHit]:
    """The hits of one search, best first, each revision with its fact and subjects loaded.

    `keyword` and `semantic` run one leg; `hybrid` runs both, each `HYBRID.depth(top_k)` deep,
    and fuses them by weighted reciprocal rank (`retrieval.fusion.HYBRID`; ties keep the keyword
    leg's order). A query with no searchable word (stop words only) has an empty keyword leg,
    and hybrid is then the semantic leg's order.
    The query is embedded before the semantic leg runs; hybrid's keyword leg, which needs no
    vector, runs meanwhile (`_hybrid_alongside_embedding`). An embedder failure changes
    nothing: no leg writes.
    """
    if search.mode not in MODES:
        raise ValueError(f"unknown search mode {search.mode!r}")
    search.floors  # noqa: B018  (a min_relevance the mode cannot take fails before any work)
    if search.mode == HYBRID_MODE and not search.rerank:
        return _hybrid_alongside_embedding(search)
    vector: list[float] | None = None
    model = ""
    if search.mode in (SEMANTIC, HYBRID_MODE):
        vector, model = embed_query(search.query)
    return fact_search_embedded(search=search, vector=vector, model=model)


# A hybrid search's query is embedded on the process's embedding threads while its keyword
# leg runs on the request's thread: the model (ONNX Runtime, torch, an HTTP embedder) releases
# the GIL while it works, so the keyword leg's round trip and rows cost no time of their own
# (bench/peers.py).
def _hybrid_alongside_embedding(search: FactSearch) -> list[SearchHit]:
    """`fact_search_embedded`'s hybrid search, its keyword leg read while the query is
    embedded on the embedding thread; the semantic leg after. Both legs read what is live at
    one moment (`now`), as in one round trip."""
    pending = embedding_pool().submit(embed_query, search.query)
    depth = HYBRID.depth(search.top_k)
    now = timezone.now()
    try:
        words = _keyword_inputs(search, now)
        keyword, _ = _legs(words, None, depth) if words else ([], [])
    except BaseException:
        pending.cancel()  # if it has not started; a running embedding finishes and is dropped
        raise
    vector, model = pending.result()  # an embedder failure raises here, as it would alone
    _, semantic = _legs(None, _semantic_inputs(search, vector, model, now), depth)
    return _fused(keyword, semantic, search.top_k, search.floors)


def _fused(keyword: list[Row], semantic: list[Row], page: int, floors: Floors) -> list[SearchHit]:
    """The legs' rows over their floors fused (`retrieval.fusion.HYBRID`), the first `page`
    as hits."""
    if floors.keyword is not None:
        keyword = [r for r in keyword if floors.keeps_keyword(float(r.annotation("score")))]
    if floors.semantic is not None:
        semantic = [
            r for r in semantic if floors.keeps_semantic(1.0 - float(r.annotation("distance")))
        ]
    fused = HYBRID.fuse({KEYWORD: keyword, SEMANTIC: semantic}, key=lambda r: r.pk)
    hits = [
        SearchHit(revision=f.item.model(), score=f.score, ranks=dict(f.ranks)) for f in fused[:page]
    ]
    attach_subjects([h.revision for h in hits])
    return hits


def fact_search_embedded(
    *, search: FactSearch, vector: Sequence[float] | None, model: str
) -> list[SearchHit]:
    """`fact_search` with the query already embedded (`vector` of `model`; None for keyword):
    the SQL part alone, which bench/search.py times."""
    rerankers = rerankers_named(search.rerank)
    floors = search.floors
    page = candidate_pool(search.top_k) if rerankers else search.top_k
    if search.mode == KEYWORD:
        hits = [
            SearchHit(revision=r, score=s, ranks={KEYWORD: i})
            for i, (r, s) in enumerate(keyword_leg(search, page), start=1)
            if floors.keeps_keyword(s)
        ]
    elif search.mode == SEMANTIC:
        assert vector is not None
        hits = [
            SearchHit(revision=r, score=s, ranks={SEMANTIC: i})
            for i, (r, s) in enumerate(semantic_leg(search, page, vector, model), start=1)
            if floors.keeps_semantic(s)
        ]
    else:
        assert vector is not None
        depth = max(HYBRID.depth(search.top_k), page)
        now = timezone.now()  # both legs read what is live at one moment, in one round trip
        keyword, semantic = _legs(
            _keyword_inputs(search, now), _semantic_inputs(search, vector, model, now), depth
        )
        hits = _fused(keyword, semantic, page, floors)
        return _reranked(search, hits, rerankers) if rerankers else hits
    if rerankers:
        hits = _reranked(search, hits, rerankers)
    attach_subjects([h.revision for h in hits])
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
