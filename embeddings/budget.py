"""Embedding inside a write, within a time budget: the one policy facts and recall share.

A write embeds its texts before it takes any lock, on a thread, and stops waiting after
`settings.EMBED_BUDGET_MS`: whatever the provider does (slow, down, misconfigured), the write
answers in time and never fails because of embedding. What the budget could not embed is
left for the owning app's task (`Embedded.needs_task`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings

from embeddings.providers import get_embedder
from kindmem.errors import EmbeddingUnavailable

logger = logging.getLogger(__name__)


class EmbedOutcome(StrEnum):
    """How a write's embedding went (facts store it as the revision's `embedding_state`)."""

    DONE = "done"
    PENDING = "pending"  # the budget ran out; the task embeds it
    FAILED = "failed"  # the provider erred or cannot be built; the task retries
    NONE = "none"  # no embedder is configured


@dataclass(frozen=True)
class Embedded:
    """What a write got for its texts: one vector per text of `model`, or none yet."""

    state: EmbedOutcome
    vectors: list[list[float]] | None = None
    model: str | None = None

    @property
    def needs_task(self) -> bool:
        return self.state in (EmbedOutcome.PENDING, EmbedOutcome.FAILED)


# A provider that hangs ties up these threads, never the request (or its locks). One pool per
# process, made on first use: a pool's threads do not survive a fork (gunicorn's and Celery's
# workers are forked), and a copied pool would believe it still had them.
_pool_of_process: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _pool_of_process
    with _pool_lock:
        if _pool_of_process is None or _pool_of_process[0] != os.getpid():
            _pool_of_process = (
                os.getpid(),
                ThreadPoolExecutor(max_workers=2, thread_name_prefix="kindmem-embed-on-write"),
            )
        return _pool_of_process[1]


def embed_within_budget(texts: Sequence[str]) -> Embedded:
    """Embed `texts` (one provider call: a batch) within `settings.EMBED_BUDGET_MS`. Call it
    before taking any row lock. Never raises."""
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable:
        logger.warning("the configured embedder cannot be built; the write waits unembedded")
        return Embedded(EmbedOutcome.FAILED)
    if embedder is None:
        return Embedded(EmbedOutcome.NONE)
    if not texts:
        return Embedded(EmbedOutcome.DONE, vectors=[], model=embedder.model)
    budget = settings.EMBED_BUDGET_MS / 1000
    if budget <= 0:
        return Embedded(EmbedOutcome.PENDING)
    future = _pool().submit(embedder.embed, list(texts))
    try:
        vectors = future.result(timeout=budget)
    except FutureTimeout:
        future.cancel()  # if it has not started; a running call finishes and is dropped
        return Embedded(EmbedOutcome.PENDING)
    except Exception:  # any provider failure leaves the texts for the task, never a 500
        logger.warning("embedding on write failed; the embed task will retry", exc_info=True)
        return Embedded(EmbedOutcome.FAILED)
    return Embedded(EmbedOutcome.DONE, vectors=vectors, model=embedder.model)
