"""The existing memories an extraction shows the model: what the run may read of the agent's
declared types, found by search for the new messages' words (hybrid with an embedder, keyword
without), then topped up with the newest of those types, at most
KINDMEM_EXTRACTION_MAX_MEMORIES. Every read starts from the run's readers (the guard, holds
and `live()`), so the model is never shown, and can never name, what the run may not read."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from django.conf import settings

from api.errors import EmbeddingUnavailable
from approvals.review_reasons import review_text
from embeddings.providers import get_embedder
from extraction.prompt import ShownMemory, ShownMessage
from facts.models import Revision
from facts.search import FactSearch, fact_search
from kindmem.access import Principal, readers_for

# The search query: the messages' words only (no quotes or minus signs, which the keyword
# syntax reads as phrases and exclusions), at most this many characters.
QUERY_CHARS = 2000
_WORD = re.compile(r"\w+")


def updatable(content: object) -> bool:
    """Whether the model may propose a new text for a memory: its content is a text, or an
    object whose `text` is (what `remember` writes). A structured memory (an app's record of
    fields) is not rewritten from a sentence, so it is not shown."""
    if isinstance(content, str):
        return True
    return isinstance(content, dict) and isinstance(content.get("text"), str)


def search_query(messages: Iterable[ShownMessage]) -> str:
    return " ".join(_WORD.findall(" ".join(m.text for m in messages)))[:QUERY_CHARS]


def memories_for(
    *, principal: Principal, types: list[str], messages: list[ShownMessage]
) -> list[ShownMemory]:
    limit = settings.EXTRACTION_MAX_MEMORIES
    if not limit or not types:
        return []
    readers = readers_for(principal)
    query = search_query(messages)
    found: dict[str, Revision] = {}
    if query:
        mode = "hybrid" if _embedder_ready() else "keyword"
        search = FactSearch(
            tenant_id=principal.tenant_id,
            readers=readers,
            mode=mode,
            query=query,
            top_k=min(100, limit * 3),
        )
        try:
            hits = fact_search(search=search)
        except EmbeddingUnavailable:  # the embedder is configured and down: words only
            hits = fact_search(search=dataclasses.replace(search, mode="keyword"))
        for hit in hits:
            revision = hit.revision
            if revision.fact.type in types and updatable(revision.content):
                found.setdefault(str(revision.fact_id), revision)
    if len(found) < limit:
        newest = (
            Revision.objects.of_tenant(principal.tenant_id)
            .live()
            .readable_by(readers)
            .filter(fact__type__in=types)
            .exclude(fact_id__in=list(found))
            .select_related("fact")
            .defer("embedding", "search_vector")
            .order_by("-created_at", "id")[: limit * 2]
        )
        for revision in newest:
            if updatable(revision.content):
                found.setdefault(str(revision.fact_id), revision)
    return [
        ShownMemory(
            fact_id=fact_id,
            revision_id=str(revision.pk),
            type=revision.fact.type,
            text=review_text(revision.content),
            content=revision.content,
        )
        for fact_id, revision in list(found.items())[:limit]
    ]


def _embedder_ready() -> bool:
    try:
        return get_embedder() is not None
    except EmbeddingUnavailable:
        return False
