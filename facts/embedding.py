"""Embedding providers: texts in, vectors out, with the model's name stored beside each vector.

Chosen by `KINDMEM_EMBEDDER`: `none` (semantic search then fails loudly with
`embedding-unavailable`), `local` (all-MiniLM-L6-v2 on CPU), `openai` (any OpenAI-compatible
`/v1/embeddings` server), or `hashing` (a deterministic stand-in for tests and benchmarks).
Every provider yields unit vectors of `DIMENSIONS` floats, the width of the vector columns.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from functools import cache
from typing import Protocol

from django.conf import settings

from kindmem.errors import EmbeddingUnavailable

DIMENSIONS = 384


class EmbeddingFailed(Exception):
    """The provider is configured but did not answer (timeout, HTTP error, bad payload)."""


class Embedder(Protocol):
    model: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector of `dimensions` floats per text, in order. Raises EmbeddingFailed."""
        ...


class HashingEmbedder:
    """Deterministic bag-of-words vectors (feature hashing): texts sharing words are near.

    Not a language model: it stands in for one where tests and benchmarks need repeatable
    vectors without loading weights.
    """

    model = "kindmem-hashing-v1"
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for token in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimensions
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0] = 1.0  # an empty text still gets a valid unit vector
            return vector
        return [v / norm for v in vector]


@cache
def _configured(name: str) -> Embedder | None:
    if name == "none":
        return None
    if name == "hashing":
        return HashingEmbedder()
    raise EmbeddingUnavailable(f"The embedder {name!r} is not available in this build.")


def get_embedder() -> Embedder | None:
    """The configured provider (loaded once per process), or None when none is configured."""
    return _configured(settings.EMBEDDER)


def require_embedder() -> Embedder:
    """The configured provider; `embedding-unavailable` when there is none (never empty results)."""
    embedder = get_embedder()
    if embedder is None:
        raise EmbeddingUnavailable()
    return embedder
