"""Recall: a reader's earlier conversations, by list, keyword or meaning (`searchConversations`).

One query finds the hits (guard, holds, selections and roles in its WHERE, before the LIMIT);
one more fetches every hit's neighbours. Semantic recall without an embedder fails loudly.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F, Q
from pgvector.django import CosineDistance

from embeddings.providers import EmbeddingFailed, require_embedder
from kindmem.access import Readers
from kindmem.errors import EmbeddingUnavailable
from recall.models import RECALLABLE_ROLES, Message

MODES = ("list", "keyword", "semantic")
EF_SEARCH = 100


@dataclass(frozen=True)
class Selection:
    """The seed's `RecallSelection`: one agent's conversations, narrowed by every field given."""

    agent_id: str
    conversation_id: str | None = None
    before_sequence: int | None = None
    exclude_conversation_id: str | None = None
    participant_id: str | None = None
    user_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    segments_prefix: tuple[str, ...] = ()

    def condition(self) -> Q:
        q = Q(conversation__agent__agent_id=self.agent_id)
        if self.conversation_id is not None:
            q &= Q(conversation__thread_id=self.conversation_id)
        if self.before_sequence is not None:
            q &= Q(sequence__lt=self.before_sequence)
        if self.exclude_conversation_id is not None:
            q &= ~Q(conversation__thread_id=self.exclude_conversation_id)
        if self.participant_id is not None:
            q &= Q(conversation__participant_id=self.participant_id)
        if self.user_id is not None:
            q &= Q(conversation__user_id=self.user_id)
        if self.project_id is not None:
            q &= Q(conversation__project_id=self.project_id)
        if self.segments_prefix:
            # segments[1:n] = prefix (an array slice compares element by element)
            n = len(self.segments_prefix)
            q &= Q(**{f"conversation__segments__0_{n}": list(self.segments_prefix)})
        return q


@dataclass(frozen=True)
class Neighbour:
    role: str
    text: str


@dataclass
class RecallHit:
    message: Message
    score: float | None
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


def recall_search(*, request: RecallQuery) -> list[RecallHit]:
    """The hits of one recall, best first (`list`: newest first), each with its neighbours."""
    roles = [r for r in request.roles if r in RECALLABLE_ROLES]
    base = (
        Message.objects.of_tenant(request.tenant_id)
        .recall_readable_by(request.readers)
        .not_held()
        .of_roles(roles)
        .selected(request.selections)
        .select_related("conversation", "conversation__agent")
        .defer("embedding", "search")
    )
    if request.mode == "list":
        rows = list(base.order_by("-created_at", "-id")[: request.top_k])
        hits = [RecallHit(message=m, score=None) for m in rows]
    elif request.mode == "keyword":
        assert request.query is not None
        query = SearchQuery(request.query, config="english", search_type="websearch")
        rows = list(
            base.filter(search=query)
            .annotate(score=SearchRank(F("search"), query))
            .order_by("-score", "-created_at", "-id")[: request.top_k]
        )
        hits = [RecallHit(message=m, score=float(m.score)) for m in rows]
    elif request.mode == "semantic":
        hits = _semantic(base, request)
    else:
        raise ValueError(f"unknown recall mode {request.mode!r}")
    _attach_neighbours(hits, roles)
    return hits


def _semantic(base: Any, request: RecallQuery) -> list[RecallHit]:
    assert request.query is not None
    embedder = require_embedder()
    try:
        [vector] = embedder.embed([request.query])
    except EmbeddingFailed as exc:
        raise EmbeddingUnavailable("The embedder did not answer; try again later.") from exc
    with transaction.atomic():
        # Iterative index scans: a selective guard or selection must not starve the HNSW
        # scan of results (strict order, so the ranking stays exact). A wider candidate list
        # than pgvector's default 40 buys recall@10 (measured in bench/recall.py).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
                " set_config('hnsw.ef_search', %s, true)",
                [str(EF_SEARCH)],
            )
        rows = list(
            # only vectors of the current model: cosine across two models' spaces means nothing
            base.filter(embedding__isnull=False, embedding_model=embedder.model)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance", "-id")[: request.top_k]
        )
    return [RecallHit(message=m, score=1.0 - float(m.distance)) for m in rows]


NEIGHBOURS_SQL = """
SELECT h.conversation_id, h.sequence, b.role, b.text, a.role, a.text
FROM unnest(%s::uuid[], %s::integer[]) AS h(conversation_id, sequence)
LEFT JOIN LATERAL (
    SELECT m.role, m.text FROM {table} m
    WHERE m.conversation_id = h.conversation_id AND m.sequence < h.sequence
      AND m.role = ANY(%s::text[])
    ORDER BY m.sequence DESC LIMIT 1
) b ON true
LEFT JOIN LATERAL (
    SELECT m.role, m.text FROM {table} m
    WHERE m.conversation_id = h.conversation_id AND m.sequence > h.sequence
      AND m.role = ANY(%s::text[])
    ORDER BY m.sequence ASC LIMIT 1
) a ON true
"""


def _attach_neighbours(hits: list[RecallHit], roles: list[str]) -> None:
    """Every hit's nearest indexed message of `roles` either side, in ONE query for all hits.

    The neighbours are in the hit's own conversation, which already passed the guard; each
    side walks the (conversation, sequence) unique index backwards or forwards to one row.
    """
    if not hits:
        return
    conversations = [h.message.conversation_id for h in hits]
    sequences = [h.message.sequence for h in hits]
    sql = NEIGHBOURS_SQL.format(table=connection.ops.quote_name(Message._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, [conversations, sequences, roles, roles])
        rows = cursor.fetchall()
    found = {
        (conv, seq): (b_role, b_text, a_role, a_text)
        for conv, seq, b_role, b_text, a_role, a_text in rows
    }
    for hit in hits:
        b_role, b_text, a_role, a_text = found[(hit.message.conversation_id, hit.message.sequence)]
        hit.before = Neighbour(b_role, b_text) if b_role is not None else None
        hit.after = Neighbour(a_role, a_text) if a_role is not None else None
