"""Background work of recall: embedding messages the write path could not embed, and the
backlog sweep that beat runs."""

from __future__ import annotations

from celery import shared_task

from embeddings.backlog import backlog_sweep
from embeddings.providers import EmbeddingFailed
from kindmem.row_security import tenant_context
from recall.embedding import backlog_embed, messages_embed_pending


@shared_task(
    acks_late=True,
    autoretry_for=(EmbeddingFailed,),
    retry_backoff=30,
    max_retries=5,
    time_limit=300,
    soft_time_limit=270,
)
def embed_messages(message_ids: list[int], tenant_id: str) -> int:
    """Embed the messages of `message_ids` (of `tenant_id`) still pending; safe to run twice."""
    with tenant_context(tenant_id):
        return messages_embed_pending(message_ids=message_ids)


@shared_task(name="recall.tasks.embed_backlog", acks_late=True, time_limit=300, soft_time_limit=270)
def embed_backlog() -> int:
    """Beat: embed the recent messages still without a vector whose `embed_messages` was never
    queued (see embeddings/backlog.py)."""
    return backlog_sweep(backlog_embed, what="messages")
