"""Embedding revisions after the write: what the write budget could not embed, and a model
change (`manage.py reembed`). Batched: `EMBED_BATCH` texts per provider call."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction

from embeddings.providers import Embedder, EmbeddingFailed, get_embedder
from facts.models import EmbeddingState, Revision

EMBED_BATCH = 64


def revisions_embed(
    *,
    revision_ids: Sequence[uuid.UUID | str],
    embedder: Embedder | None = None,
    top_up_tenant_id: uuid.UUID | str | None = None,
) -> int:
    """Embed those of `revision_ids` that are current and lack a vector of the configured model,
    `EMBED_BATCH` texts per provider call. Safe to run twice and concurrently: a row is written
    only while it still lacks that vector and still holds the text that was embedded. A provider
    failure marks the asked revisions `failed` and raises `EmbeddingFailed` (the task retries).
    Returns how many revisions got a vector.

    With `top_up_tenant_id`, a batch with room left is topped up with that tenant's other
    revisions still waiting (`pending`, oldest first). Each write queues a task for its own
    revision, so under a backlog (an embedder slower than the write budget, or one that was
    down) the first task embeds up to `EMBED_BATCH` writes in one provider call and the later
    tasks find nothing left to do, instead of one call per text. Should the topped-up call
    fail, the asked revisions are tried alone, so that one text the provider refuses never
    holds back the tasks of others."""
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    done = 0
    ids = list(revision_ids)
    for start in range(0, len(ids), EMBED_BATCH):
        pending = list(
            Revision.objects.filter(pk__in=ids[start : start + EMBED_BATCH])
            .unembedded(embedder.model)
            .order_by("pk")
            .values_list("pk", "search_text")
        )
        if not pending:
            continue
        extra: list[tuple[uuid.UUID, str]] = []
        if top_up_tenant_id is not None and len(pending) < EMBED_BATCH:
            extra = list(
                Revision.objects.of_tenant(top_up_tenant_id)
                .waiting_for_embedding()
                .unembedded(embedder.model)
                .exclude(pk__in=[pk for pk, _ in pending])
                .values_list("pk", "search_text")[: EMBED_BATCH - len(pending)]
            )
        try:
            vectors = embedder.embed([text for _, text in pending + extra])
            pending += extra
        except EmbeddingFailed:
            if not extra:
                Revision.objects.filter(pk__in=[pk for pk, _ in pending]).unembedded(
                    embedder.model
                ).update(embedding_state=EmbeddingState.FAILED)
                raise
            done += revisions_embed(revision_ids=[pk for pk, _ in pending], embedder=embedder)
            continue
        with transaction.atomic():
            for (pk, text), vector in zip(pending, vectors, strict=True):
                done += (
                    Revision.objects.filter(pk=pk, search_text=text)
                    .unembedded(embedder.model)
                    .update(
                        embedding=vector,
                        embedding_model=embedder.model,
                        embedding_state=EmbeddingState.DONE,
                    )
                )
    return done


# Batches one tenant's share of a backlog sweep may embed per run (EMBED_BATCH each).
BACKLOG_ROUNDS = 8


def backlog_embed(tenant_id: uuid.UUID | str) -> int:
    """The beat sweep's part for one tenant: embed the revisions the write path left `pending`
    whose task never ran (its publish failed: the broker was down), oldest first, each provider
    call topped up to `EMBED_BATCH`, at most `BACKLOG_ROUNDS` calls. Raises `EmbeddingFailed`
    as the task does (the oldest is then marked `failed`, where `reembed` finds it). Returns how
    many revisions got a vector."""
    embedder = get_embedder()
    done = 0
    for _ in range(BACKLOG_ROUNDS if embedder is not None else 0):
        oldest = (
            Revision.objects.of_tenant(tenant_id)
            .waiting_for_embedding()
            .values_list("pk", flat=True)
            .first()
        )
        if oldest is None:
            break
        embedded = revisions_embed(
            revision_ids=[oldest], embedder=embedder, top_up_tenant_id=tenant_id
        )
        if embedded == 0:  # someone else embedded it meanwhile: the next sweep goes on
            break
        done += embedded
    return done
