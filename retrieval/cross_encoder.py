"""The operator's cross-encoder: an optional `POST /rerank` HTTP server of the common shape
(Hugging Face TEI, Jina, Cohere, vLLM, Infinity), named by `KINDMEM_RERANKER_URL` (the full
endpoint) and `KINDMEM_RERANKER_MODEL`, as the extraction model is named by its settings.
kindmem ships no reranking model and downloads none.

A search hands it its best `RERANKER_CANDIDATES` hits' texts and reorders them by the answer,
within `RERANKER_BUDGET_MS`: a server that is slower, down, or answers something else is
skipped, the search's own order stands, and the answer says so (`"reranker": "skipped"`), never
a 500 (a reranker improves an answer; its absence must not cost one).

The request carries both `documents` (Jina, Cohere, vLLM) and `texts` (TEI); the answer is
either `{"results": [{"index", "relevance_score"}]}` or TEI's `[{"index", "score"}]`.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings

logger = logging.getLogger(__name__)

T = TypeVar("T")
APPLIED = "applied"
SKIPPED = "skipped"


class RerankFailed(Exception):
    """No usable answer within the budget."""


def configured() -> bool:
    return bool(settings.RERANKER_URL)


def pool(top_k: int, most: int) -> int:
    """How many hits a search fetches for the cross-encoder to reorder into a page of `top_k`."""
    return min(max(top_k, settings.RERANKER_CANDIDATES), most) if configured() else top_k


def relevance_scores(query: str, documents: Sequence[str]) -> list[float]:
    """One score per document, in their order; RerankFailed on anything else."""
    payload: dict[str, Any] = {
        "query": query,
        "documents": list(documents),
        "texts": list(documents),
        "top_n": len(documents),
        "return_documents": False,
    }
    if settings.RERANKER_MODEL:
        payload["model"] = settings.RERANKER_MODEL
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if settings.RERANKER_API_KEY:
        headers["Authorization"] = f"Bearer {settings.RERANKER_API_KEY}"
    request = urllib.request.Request(  # noqa: S310 (the URL is the operator's setting)
        settings.RERANKER_URL, data=json.dumps(payload).encode(), headers=headers, method="POST"
    )
    timeout = settings.RERANKER_BUDGET_MS / 1000
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise RerankFailed(f"HTTP {exc.code}") from exc
    except (OSError, http.client.HTTPException, ValueError) as exc:  # timeout, refused, reset
        raise RerankFailed(f"{exc.__class__.__name__}: {exc}") from exc
    results = body.get("results") if isinstance(body, dict) else body
    if not isinstance(results, list):
        raise RerankFailed("no results list")
    scores: list[float | None] = [None] * len(documents)
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < len(documents) or scores[index] is not None:
            raise RerankFailed("a result with a missing, repeated or out-of-range index")
        if not isinstance(score, int | float) or not math.isfinite(score):
            raise RerankFailed("a result without a finite score")
        scores[index] = float(score)
    if any(s is None for s in scores):
        raise RerankFailed("fewer results than documents")
    return [s for s in scores if s is not None]


def reranked(
    query: str, hits: Sequence[T], text_of: Callable[[T], str], top_k: int
) -> tuple[list[T], str | None]:
    """`hits` reordered by the cross-encoder (ties keep their order), cut to `top_k`, and what
    happened: None (none configured, or nothing to rerank), `applied` or `skipped`."""
    if not configured() or not hits:
        return list(hits)[:top_k], None
    try:
        scores = relevance_scores(query, [text_of(h) for h in hits])
    except RerankFailed as exc:
        logger.warning("reranker skipped: %s", exc)
        return list(hits)[:top_k], SKIPPED
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [hits[i] for i in order[:top_k]], APPLIED
