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
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings

from api.errors import EmbeddingUnavailable
from embeddings.providers import get_embedder

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


def embedding_pool() -> ThreadPoolExecutor:
    """The process's embedding threads: a write's texts, and a search's query while its other
    work runs (facts.search): the model releases the GIL while it works."""
    global _pool_of_process
    with _pool_lock:
        if _pool_of_process is None or _pool_of_process[0] != os.getpid():
            _pool_of_process = (
                os.getpid(),
                ThreadPoolExecutor(max_workers=2, thread_name_prefix="kindmem-embed"),
            )
        return _pool_of_process[1]


class PendingEmbedding:
    """`texts` (one provider call: a batch) being embedded on the embedding threads from the
    moment this is made, for a write that has other work to do first; the budget
    (`settings.EMBED_BUDGET_MS`) counts from then. Call `result()` before taking any row lock:
    it waits for what is left of the budget."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._started = time.monotonic()
        self._ready: Embedded | None = None
        self._future: Future[list[list[float]]] | None = None
        self._model = ""
        try:
            embedder = get_embedder()
        except EmbeddingUnavailable:
            logger.warning("the configured embedder cannot be built; the write waits unembedded")
            self._ready = Embedded(EmbedOutcome.FAILED)
            return
        if embedder is None:
            self._ready = Embedded(EmbedOutcome.NONE)
        elif not texts:
            self._ready = Embedded(EmbedOutcome.DONE, vectors=[], model=embedder.model)
        elif settings.EMBED_BUDGET_MS <= 0:
            self._ready = Embedded(EmbedOutcome.PENDING)
        else:
            self._model = embedder.model
            self._future = embedding_pool().submit(embedder.embed, list(texts))

    def result(self) -> Embedded:
        """The vectors, or the outcome that leaves them for the task; never raises."""
        if self._ready is not None:
            return self._ready
        assert self._future is not None
        left = settings.EMBED_BUDGET_MS / 1000 - (time.monotonic() - self._started)
        try:
            vectors = self._future.result(timeout=max(left, 0.0))
        except FutureTimeout:
            self._future.cancel()  # if it has not started; a running call finishes and is dropped
            return Embedded(EmbedOutcome.PENDING)
        except Exception:  # any provider failure leaves the texts for the task, never a 500
            logger.warning("embedding on write failed; the embed task will retry", exc_info=True)
            return Embedded(EmbedOutcome.FAILED)
        return Embedded(EmbedOutcome.DONE, vectors=vectors, model=self._model)


def embed_within_budget(texts: Sequence[str]) -> Embedded:
    """Embed `texts` (one provider call: a batch) within `settings.EMBED_BUDGET_MS`. Call it
    before taking any row lock. Never raises."""
    return PendingEmbedding(texts).result()
