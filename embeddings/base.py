"""The provider interface: texts in, unit vectors of `DIMENSIONS` floats out (the width of the
vector columns). The providers (`embeddings.local`, `embeddings.openai_compatible`) implement
it; `embeddings.providers` chooses one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

DIMENSIONS = 384


class EmbeddingFailed(Exception):
    """The provider is configured but did not answer (timeout, HTTP error, bad payload)."""


class Embedder(Protocol):
    model: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector of `dimensions` floats per text, in order. Raises EmbeddingFailed."""
        ...
