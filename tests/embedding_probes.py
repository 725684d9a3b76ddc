"""Embedders that show whether other work ran while they embedded (tests of the work done
beside the embedding: facts.search, facts.services, recall.search)."""

from __future__ import annotations

import threading
from typing import Any

from embeddings.providers import HashingEmbedder

WAIT_SECONDS = 5


class WaitingEmbedder(HashingEmbedder):
    """The hashing model, answering only once `released` is set (or after WAIT_SECONDS):
    work that waits for its vector before doing anything else cannot release it."""

    def __init__(self, released: threading.Event) -> None:
        super().__init__()
        self.released = released
        self.started = threading.Event()
        self.calls = 0
        self.waited_out = False

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.started.set()
        self.waited_out = not self.released.wait(WAIT_SECONDS)
        return super().embed(texts)


def releasing_on(fragment: str, released: threading.Event) -> Any:
    """An execute wrapper that sets `released` when a statement containing `fragment` runs."""

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if fragment in sql:
            released.set()
        return execute(sql, params, many, context)

    return wrapper
