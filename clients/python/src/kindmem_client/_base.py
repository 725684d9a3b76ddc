"""What the sync and async clients share: settings, request encoding, the retry policy."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from kindmem_client.errors import error_from_response, retry_after_seconds

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0
USER_AGENT = "kindmem-client-python/0.1.0"

# what the methods take for an id and for a moment
Id = str | UUID
When = datetime | str


@dataclass(frozen=True)
class RetryPolicy:
    """How a 429 `rate-limited` or a 503 `unavailable` answer is retried: at most `max_retries`
    times, each after the server's `Retry-After` (or `backoff` * 2**attempt seconds when it
    sends none). A wait longer than `max_wait` is not waited for: the client raises
    `RateLimited` or `Unavailable` at once, so a caller is never stalled longer than it
    allowed. Only these two are retried: kindmem answers them only for a request that wrote
    nothing (the throttle and the concurrency limit refuse it before the view runs; a database
    that could not be had rolls the request back), so a retried write cannot land twice. A 503
    of another code (`embedding-unavailable`) is not retried: waiting does not wire an
    embedder, and neither is a 429 `extraction-quota`: its wait is the next day, or forever."""

    max_retries: int = 3
    # kindmem's write rates are per minute (KINDMEM_WRITE_RATE), so its Retry-After is <= 61 s
    max_wait: float = 90.0
    backoff: float = 1.0

    def wait_for(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying `response` (the `attempt`-th, from 0), or None."""
        if attempt >= self.max_retries or not retryable(response):
            return None
        wait = retry_after_seconds(response)
        if wait is None:
            wait = self.backoff * 2**attempt
        return wait if wait <= self.max_wait else None


def retryable(response: httpx.Response) -> bool:
    if response.status_code not in (429, 503):
        return False
    try:
        code = response.json().get("code")
    except (ValueError, AttributeError):
        return response.status_code == 429  # a 429 not in kindmem's shape: a proxy's limit
    # an `extraction-quota` 429 is not a moment's wait: the day's or the conversation's tokens
    return code == ("rate-limited" if response.status_code == 429 else "unavailable")


def resolve_settings(token: str | None, base_url: str | None) -> tuple[str | None, str]:
    """The credential and the server: given, else `KINDMEM_TOKEN` / `KINDMEM_URL`."""
    token = token if token is not None else os.environ.get("KINDMEM_TOKEN")
    base_url = base_url or os.environ.get("KINDMEM_URL") or DEFAULT_BASE_URL
    return token, base_url.rstrip("/")


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def segment(value: str | UUID) -> str:
    """One path segment: ids are opaque strings (a conversation id may hold a slash)."""
    return quote(str(value), safe="")


def jsonable(value: Any) -> Any:
    """`value` with datetimes as ISO 8601 and UUIDs as strings, for a JSON body."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields given: None means "not sent" (the server's default applies)."""
    return {k: jsonable(v) for k, v in fields.items() if v is not None}


def query_params(**params: Any) -> dict[str, str]:
    """Query parameters of the values given, None left out."""
    out: dict[str, str] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        else:
            out[name] = str(jsonable(value))
    return out


def checked(response: httpx.Response) -> httpx.Response:
    """`response`, or the typed exception for its error answer."""
    if response.is_error:
        raise error_from_response(response)
    return response
