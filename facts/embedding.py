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
    *, revision_ids: Sequence[uuid.UUID | str], embedder: Embedder | None = None
) -> int:
    """Embed those of `revision_ids` that are current and lack a vector of the configured model,
    `EMBED_BATCH` texts per provider call. Safe to run twice and concurrently: a row is written
    only while it still lacks that vector and still holds the text that was embedded. A provider
    failure marks the batch `failed` and raises `EmbeddingFailed` (the task retries). Returns
    how many revisions got a vector."""
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
        try:
            vectors = embedder.embed([text for _, text in pending])
        except EmbeddingFailed:
            Revision.objects.filter(pk__in=[pk for pk, _ in pending]).unembedded(
                embedder.model
            ).update(embedding_state=EmbeddingState.FAILED)
            raise
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
