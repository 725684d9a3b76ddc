"""Any OpenAI-compatible embeddings server: `POST {base}/v1/embeddings`.

OpenAI itself, vLLM, text-embeddings-inference, Ollama, LiteLLM and llama.cpp's server all speak
it. Standard library only: one small JSON POST does not justify an HTTP client dependency.
Failures the server may recover from (5xx, 429, timeouts, refused connections) are retried a
bounded number of times with exponential backoff; anything else fails at once. Every failure
surfaces as `EmbeddingFailed` with a message that names the cause and never the API key.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from embeddings.base import DIMENSIONS, EmbeddingFailed

# OpenAI accepts at most 2048 inputs per request; smaller requests also keep each one well
# inside the timeout on slower self-hosted servers.
BATCH_SIZE = 128
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 8.0


class _Retryable(Exception):
    """A failure worth another attempt; its message becomes EmbeddingFailed's if none succeeds."""


def embeddings_url(base_url: str) -> str:
    """`{base}/v1/embeddings`, accepting a base given with or without its trailing `/v1`."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/embeddings"


class OpenAICompatibleEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_seconds: float = 10.0,
        retries: int = 2,
        backoff_seconds: float = 0.5,
        send_dimensions: bool = False,
        dimensions: int = DIMENSIONS,
    ) -> None:
        self.url = embeddings_url(base_url)
        self.model = model
        self.dimensions = dimensions
        self.timeout_seconds = timeout_seconds
        self.retries = max(0, retries)
        self.backoff_seconds = backoff_seconds
        self._api_key = api_key
        # Models that can shorten their vectors (text-embedding-3-*) are asked for exactly the
        # column's width; others reject the field, so it is only sent when configured.
        self.send_dimensions = send_dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = list(texts[start : start + BATCH_SIZE])
            vectors.extend(
                self._embed_batch(batch, timeout=self.timeout_seconds, retries=self.retries)
            )
        return vectors

    def probe(self, *, timeout_seconds: float) -> None:
        """One tiny request, no retries: raises EmbeddingFailed unless the server answers well."""
        self._embed_batch(["kindmem health probe"], timeout=timeout_seconds, retries=0)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self.send_dimensions:
            payload["dimensions"] = self.dimensions
        return payload

    def _embed_batch(self, texts: list[str], *, timeout: float, retries: int) -> list[list[float]]:
        payload = self._payload(texts)
        last_error = ""
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(min(self.backoff_seconds * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS))
            try:
                body = self._request(payload, timeout)
            except _Retryable as exc:
                last_error = str(exc)
                continue
            return self._vectors(body, len(texts))
        attempts = retries + 1
        raise EmbeddingFailed(
            f"The embedder at {self.url} failed after {attempts} attempt(s): {last_error}"
        )

    def _request(self, payload: dict[str, Any], timeout: float) -> Any:
        """The parsed JSON answer; raises _Retryable or EmbeddingFailed."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(  # noqa: S310 (the URL is the operator's setting)
            self.url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            message = f"HTTP {exc.code}{': ' + detail if detail else ''}"
            if exc.code in RETRY_STATUSES:
                raise _Retryable(message) from exc
            raise EmbeddingFailed(
                f"The embedder at {self.url} refused the request: {message}"
            ) from exc
        except TimeoutError as exc:
            raise _Retryable(f"no answer within {timeout:g} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Retryable(f"no answer within {timeout:g} s") from exc
            raise _Retryable(f"cannot connect ({exc.reason})") from exc
        except (OSError, http.client.HTTPException) as exc:  # reset, or cut off mid-answer
            raise _Retryable(f"connection failed ({exc.__class__.__name__})") from exc
        try:
            return json.loads(raw)
        except ValueError:
            message = f"The embedder at {self.url} answered with invalid JSON."
            raise EmbeddingFailed(message) from None

    def _vectors(self, body: Any, count: int) -> list[list[float]]:
        """The `data` items in input order (by their `index`), checked and scaled to unit length."""

        def malformed(why: str) -> EmbeddingFailed:
            return EmbeddingFailed(f"The embedder at {self.url} answered malformed JSON: {why}")

        items = body.get("data") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise malformed("no `data` list")
        if len(items) != count:
            raise malformed(f"{len(items)} embeddings for {count} inputs")
        ordered: list[list[float] | None] = [None] * count
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise malformed(f"item {position} is not an object")
            index = item.get("index", position)
            embedding = item.get("embedding")
            if type(index) is not int or not 0 <= index < count or ordered[index] is not None:
                raise malformed(f"item {position} has a missing, repeated or out-of-range index")
            if not isinstance(embedding, list):
                raise malformed(f"item {position} has no `embedding` list")
            if len(embedding) != self.dimensions:
                raise EmbeddingFailed(
                    f"The embedder at {self.url} (model {self.model!r}) returned vectors of "
                    f"{len(embedding)} dimensions; kindmem stores {self.dimensions}."
                )
            ordered[index] = _unit(embedding, malformed)
        # every slot was filled exactly once (a missing or repeated index raised above)
        return [vector for vector in ordered if vector is not None]


def _unit(embedding: list[Any], malformed: Any) -> list[float]:
    if not all(type(v) in (int, float) and math.isfinite(v) for v in embedding):
        raise malformed("an embedding holds a value that is not a finite number")
    norm = math.sqrt(sum(v * v for v in embedding))
    if norm == 0.0:
        raise malformed("an embedding is all zeros")
    return [v / norm for v in embedding]


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The server's own error message, if it gave one, cut short."""
    try:
        body = json.loads(error.read() or b"null")
    except (ValueError, OSError):
        return ""
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        detail = detail.get("message")
    return str(detail)[:200] if detail else ""
