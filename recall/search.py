"""Recall: a reader's earlier conversations, by list, keyword, meaning or both
(`searchConversations`).

One query per leg finds the hits (guard, holds, selections and roles in its WHERE, before the
LIMIT; hybrid runs two, keyword and semantic, and fuses them); one more fetches every hit's
neighbours. Semantic and hybrid recall without an embedder fail loudly.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Value
from pgvector.django import CosineDistance

from api.tracing import memory_operation
from embeddings.budget import embedding_pool
from embeddings.hnsw import hnsw_settings
from embeddings.providers import embed_query
from kindmem.access import Readers
from kindmem.guards import narrowing
from recall.models import RECALLABLE_ROLES, Message
from recall.querysets import MessageQuerySet, Selection
from retrieval import temporal
from retrieval.fulltext import keyword_matches
from retrieval.fusion import HYBRID
from retrieval.relevance import Floors, floors
from retrieval.rerank import Candidate, candidate_pool, rerank, rerankers_named

KEYWORD = "keyword"
SEMANTIC = "semantic"
TEMPORAL = "temporal"
HYBRID_MODE = "hybrid"
MODES = ("list", KEYWORD, SEMANTIC, HYBRID_MODE)
EF_SEARCH = 100


@dataclass(frozen=True)
class Neighbour:
    role: str
    text: str


@dataclass
class RecallHit:
    """A recalled message: its score (BM25 for keyword, cosine similarity for semantic, the fused
    score for hybrid, None for list), its 1-based rank in each leg that found it, neighbours."""

    message: Message
    score: float | None
    ranks: dict[str, int] = field(default_factory=dict)
    before: Neighbour | None = None
    after: Neighbour | None = None


@dataclass(frozen=True)
class RecallQuery:
    tenant_id: uuid.UUID
    readers: Readers
    selections: list[Selection]
    mode: str
    top_k: int
    roles: tuple[str, ...] = ("user",)
    query: str | None = None
    rerank: tuple[str, ...] = ()  # retrieval.rerank's names, applied in order (not for `list`)
    narrowed_to: Readers | None = None  # the caller's narrowing (`kindmem.guards`)
    # drop hits under the calibrated floors, or under the caller's (`retrieval.relevance`)
    abstain: bool = False
    min_relevance: float | None = None

    @property
    def floors(self) -> Floors:
        return floors("recall", self.mode, abstain=self.abstain, min_relevance=self.min_relevance)

    @property
    def whole_tenant(self) -> bool:
        """Whether every conversation of the tenant is readable: no guard, no narrowing."""
        return self.readers.all and narrowing(self.readers, self.narrowed_to) is None

    @property
    def recalled_roles(self) -> list[str]:
        """Whose messages are hits and neighbours: the asked roles that are ever recalled."""
        return [r for r in self.roles if r in RECALLABLE_ROLES]


def recallable(request: RecallQuery) -> MessageQuerySet:
    """What every mode searches: the reader's messages (recall guard, holds, roles, selections
    in one WHERE, before any LIMIT), with what a hit renders."""
    return (
        Message.objects.of_tenant(request.tenant_id)
        .recall_readable_by(request.readers, narrowed_to=request.narrowed_to)
        .not_held()
        .of_roles(request.recalled_roles)
        .selected(request.selections)
        .select_related("conversation", "conversation__agent")
        .defer("embedding", "search")
    )


def keyword_leg(
    base: MessageQuerySet, query: str, limit: int, *, whole_tenant: bool = False
) -> list[tuple[Message, float]]:
    """The best `limit` full-text matches of the query's words (`retrieval.fulltext`: any word,
    quoted phrases required, BM25), newest first among equals; bounded per word for a reader of
    the `whole_tenant`."""
    rows = keyword_matches(base, "search", query, bounded=whole_tenant)
    rows = rows.order_by("-score", "-created_at", "-id")
    return [(m, float(m.score)) for m in rows[:limit]]


def semantic_leg(
    base: MessageQuerySet, limit: int, vector: Sequence[float], model: str
) -> list[tuple[Message, float]]:
    """The `limit` messages nearest `vector` (cosine), among vectors of `model` only: cosine
    across two models' spaces means nothing. Score: cosine similarity."""
    with transaction.atomic():
        # Iterative index scans: a selective guard or selection must not starve the HNSW
        # scan of results (strict order, so the ranking stays exact). A wider candidate list
        # than pgvector's default 40 buys recall@10 (measured in bench/recall.py).
        with connection.cursor() as cursor:
            cursor.execute(*hnsw_settings(EF_SEARCH))
        rows = list(
            base.filter(embedding__isnull=False, embedding_model=model)
            .annotate(distance=CosineDistance("embedding", list(vector)))
            .order_by("distance", "-id")[:limit]
        )
    return [(m, 1.0 - float(m.distance)) for m in rows]


def temporal_leg(
    base: MessageQuerySet, limit: int, vector: Sequence[float], model: str, when: temporal.Window
) -> list[tuple[Message, float]]:
    """The `limit` messages said within `when` nearest `vector` (cosine): the temporal arm
    (`retrieval.temporal`). A window holds few of a reader's messages, so the scan is exact
    (`distance + 0` keeps the HNSW index out), after the guard like every leg."""
    rows = list(
        base.filter(
            created_at__gte=when.start,
            created_at__lt=when.end,
            embedding__isnull=False,
            embedding_model=model,
        )
        .annotate(distance=CosineDistance("embedding", list(vector)))
        .order_by(F("distance") + Value(0.0), "-id")[:limit]
    )
    return [(m, 1.0 - float(m.distance)) for m in rows]


@memory_operation(
    "recall",
    before=lambda request: {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.memory.scope": "conversation",
        "kindmem.memory.kind": "message",
        "kindmem.search.mode": request.mode,
        "kindmem.search.top_k": request.top_k,
    },
    after=lambda hits: {"gen_ai.memory.search.result.count": len(hits)},
)
def recall_search(*, request: RecallQuery) -> list[RecallHit]:
    """The hits of one recall, best first (`list`: newest first), each with its neighbours.

    `semantic` embeds the query before any SQL runs, `hybrid` while its keyword leg runs (on
    the process's embedding threads: the model releases the GIL), before its semantic leg;
    either fails with `embedding-unavailable` without an embedder, never with an empty list, and
    writes nothing."""
    if request.mode not in MODES:
        raise ValueError(f"unknown recall mode {request.mode!r}")
    request.floors  # noqa: B018  (a min_relevance the mode cannot take fails before any work)
    if request.mode == SEMANTIC:
        assert request.query is not None
        vector, model = embed_query(request.query)
        return _recall(request, lambda: (vector, model))
    if request.mode == HYBRID_MODE:
        assert request.query is not None
        pending = embedding_pool().submit(embed_query, request.query)
        try:
            return _recall(request, pending.result)
        finally:
            pending.cancel()  # a leg that failed first: the embedding, if not started, is dropped
    return _recall(request, lambda: (None, ""))


def recall_search_embedded(
    *, request: RecallQuery, vector: Sequence[float] | None, model: str
) -> list[RecallHit]:
    """`recall_search` with the query already embedded (`vector` of `model`; None for list and
    keyword).

    `hybrid` runs both legs, each `HYBRID.depth(top_k)` deep, and fuses them as fact search does
    (`retrieval.fusion.HYBRID`); its hits carry their neighbours like every other mode's. Named
    rerankers reorder a deeper pool (`retrieval.rerank`) before the page is cut."""
    return _recall(request, lambda: (vector, model))


def _recall(
    request: RecallQuery, embedded: Callable[[], tuple[Sequence[float] | None, str]]
) -> list[RecallHit]:
    """One recall; `embedded()` gives the query's vector and its model, asked only where a
    leg needs it (hybrid: after its keyword leg)."""
    base = recallable(request)
    floors = request.floors
    rerankers = rerankers_named(request.rerank) if request.mode != "list" else []
    page = candidate_pool(request.top_k) if rerankers else request.top_k
    if request.mode == "list":
        rows = list(base.order_by("-created_at", "-id")[: request.top_k])
        hits = [RecallHit(message=m, score=None) for m in rows]
    elif request.mode == KEYWORD:
        assert request.query is not None
        hits = [
            RecallHit(message=m, score=s, ranks={KEYWORD: i})
            for i, (m, s) in enumerate(
                keyword_leg(base, request.query, page, whole_tenant=request.whole_tenant), start=1
            )
            if floors.keeps_keyword(s)
        ]
    elif request.mode == SEMANTIC:
        vector, model = embedded()
        assert vector is not None
        hits = [
            RecallHit(message=m, score=s, ranks={SEMANTIC: i})
            for i, (m, s) in enumerate(semantic_leg(base, page, vector, model), start=1)
            if floors.keeps_semantic(s)
        ]
    else:
        assert request.query is not None
        depth = max(HYBRID.depth(request.top_k), page)
        keyword = [
            m
            for m, s in keyword_leg(base, request.query, depth, whole_tenant=request.whole_tenant)
            if floors.keeps_keyword(s)
        ]
        vector, model = embedded()
        assert vector is not None
        legs = {
            KEYWORD: keyword,
            SEMANTIC: [
                m for m, s in semantic_leg(base, depth, vector, model) if floors.keeps_semantic(s)
            ],
        }
        when = temporal.window(request.query) if TEMPORAL in settings.RETRIEVAL_ARMS else None
        if when is not None:
            dated = temporal_leg(base, depth, vector, model, when)
            if not dated and request.abstain:
                return []  # it asks about a time when nothing readable was said
            legs[TEMPORAL] = [m for m, s in dated if floors.keeps_semantic(s)]
        fused = HYBRID.fuse(legs, key=lambda m: m.pk)[:page]
        hits = [RecallHit(message=f.item, score=f.score, ranks=dict(f.ranks)) for f in fused]
    if rerankers:
        hits = _reranked(request, hits, rerankers)
    _attach_neighbours(hits, request.recalled_roles)
    return hits


def _reranked(request: RecallQuery, hits: list[RecallHit], rerankers: list) -> list[RecallHit]:
    """The pool reordered by the rerankers, cut to `top_k`; vectors read in one query, only
    for a reranker that uses them. Messages carry a time, never a trust or a slot."""
    vectors: dict[int, Any] = {}
    if any(r.needs_vectors for r in rerankers) and hits:
        vectors = dict(
            Message.objects.filter(pk__in=[h.message.pk for h in hits]).values_list(
                "pk", "embedding"
            )
        )
    candidates = [
        Candidate(
            item=h, key=h.message.pk, vector=vectors.get(h.message.pk), at=h.message.created_at
        )
        for h in hits
    ]
    query = request.query or ""
    return [c.item for c in rerank(query, candidates, request.top_k, rerankers)]


NEIGHBOURS_SQL = """
SELECT h.conversation_id, h.sequence, b.role, b.text, a.role, a.text
FROM unnest(%s::uuid[], %s::integer[]) AS h(conversation_id, sequence)
LEFT JOIN LATERAL (
    SELECT m.role, m.text FROM {table} m
    WHERE m.tenant_id = %s AND m.conversation_id = h.conversation_id AND m.sequence < h.sequence
      AND m.role = ANY(%s::text[])
    ORDER BY m.sequence DESC LIMIT 1
) b ON true
LEFT JOIN LATERAL (
    SELECT m.role, m.text FROM {table} m
    WHERE m.tenant_id = %s AND m.conversation_id = h.conversation_id AND m.sequence > h.sequence
      AND m.role = ANY(%s::text[])
    ORDER BY m.sequence ASC LIMIT 1
) a ON true
"""


def _attach_neighbours(hits: list[RecallHit], roles: list[str]) -> None:
    """Every hit's nearest indexed message of `roles` either side, in ONE query for all hits.

    The neighbours are in the hit's own conversation, which already passed the guard; each
    side walks the (tenant, conversation, sequence) unique index backwards or forwards to one
    row. The tenant is named as a value (on Citus: the tenant's shard only).
    """
    if not hits:
        return
    conversations = [h.message.conversation_id for h in hits]
    sequences = [h.message.sequence for h in hits]
    sql = NEIGHBOURS_SQL.format(table=connection.ops.quote_name(Message._meta.db_table))
    with connection.cursor() as cursor:
        tenant = hits[0].message.tenant_id  # one request's hits: one tenant
        cursor.execute(sql, [conversations, sequences, tenant, roles, tenant, roles])
        rows = cursor.fetchall()
    found = {
        (conv, seq): (b_role, b_text, a_role, a_text)
        for conv, seq, b_role, b_text, a_role, a_text in rows
    }
    for hit in hits:
        b_role, b_text, a_role, a_text = found[(hit.message.conversation_id, hit.message.sequence)]
        hit.before = Neighbour(b_role, b_text) if b_role is not None else None
        hit.after = Neighbour(a_role, a_text) if a_role is not None else None
