"""Embedding messages after the write: what the write budget could not embed, and the beat
sweep's backlog (messages whose task was never queued)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

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


# How far back the backlog sweep looks, and how many messages of a tenant it embeds per run.
# Older messages still without a vector were written before an embedder was configured, or
# their text is one the embedder refuses: neither is the sweep's to retry forever.
BACKLOG_WINDOW = timedelta(days=1)
BACKLOG_LIMIT = 512
BACKLOG_BATCH = 64


def backlog_embed(tenant_id: uuid.UUID | str) -> int:
    """The beat sweep's part for one tenant: embed the messages of the last `BACKLOG_WINDOW`
    still without a vector (their `embed_messages` never ran: the broker was down when the
    write committed), oldest first, `BACKLOG_BATCH` per provider call, at most `BACKLOG_LIMIT`.
    Raises `EmbeddingFailed` as the task does. Returns how many were embedded."""
    embedder = get_embedder()
    if embedder is None:
        return 0
    ids = list(
        Message.objects.of_tenant(tenant_id)
        .filter(embedding__isnull=True, created_at__gte=timezone.now() - BACKLOG_WINDOW)
        .exclude(role=Role.TOOL)
        .order_by("id")
        .values_list("id", flat=True)[:BACKLOG_LIMIT]
    )
    return sum(
        messages_embed_pending(message_ids=ids[start : start + BACKLOG_BATCH], embedder=embedder)
        for start in range(0, len(ids), BACKLOG_BATCH)
    )
