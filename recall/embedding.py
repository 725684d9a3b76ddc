"""Embedding messages after the write: what the write budget could not embed."""

from __future__ import annotations

from django.db import transaction

from embeddings.providers import Embedder, get_embedder
from recall.models import Message, Role


def messages_embed_pending(*, message_ids: list[int], embedder: Embedder | None = None) -> int:
    """Embed those of `message_ids` still without a vector (tool messages never). Safe to run
    twice: only rows still pending are written. Returns how many were embedded."""
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    pending = list(
        Message.objects.filter(id__in=message_ids, embedding__isnull=True)
        .exclude(role=Role.TOOL)
        .order_by("id")
        .only("id", "text")
    )
    if not pending:
        return 0
    vectors = embedder.embed([m.text for m in pending])  # EmbeddingFailed: the task retries
    done = 0
    with transaction.atomic():
        for message, vector in zip(pending, vectors, strict=True):
            done += Message.objects.filter(id=message.id, embedding__isnull=True).update(
                embedding=vector, embedding_model=embedder.model
            )
    return done
