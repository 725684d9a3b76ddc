"""kindmem's errors as exceptions: one class per code of the API's error vocabulary.

Every error kindmem answers has one shape, `{"code", "message", "details"}`; the client raises
the class registered for its `code` (`FactNotFound` for `fact-not-found`, ...), each a
subclass of `KindmemError`, so `except KindmemError` catches them all and `except NotFound`
catches `not-found` and `fact-not-found` alike. A code this client does not know (a newer
server) raises `KindmemError` itself, with that code; an answer that is not in the error shape
(a proxy's HTML page) raises `UnexpectedResponse`.
"""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

__all__ = [
    "CODES",
    "Conflict",
    "EmbeddingUnavailable",
    "ErasureInProgress",
    "ExtractionQuota",
    "ExtractionUnavailable",
    "FactNotFound",
    "Forbidden",
    "HeadersTooLarge",
    "InvalidFact",
    "KindmemError",
    "LinkExpired",
    "MemoryLimitReached",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "NotImplementedByServer",
    "PersistenceError",
    "RateLimited",
    "RequestTooLarge",
    "RetentionViolation",
    "StaleApproval",
    "Unauthenticated",
    "UnexpectedResponse",
    "UnsupportedMediaType",
    "UriTooLong",
    "ValidationError",
    "error_from_response",
]


class KindmemError(Exception):
    """An error answer from kindmem: its `code`, `message`, `details` and HTTP `status_code`."""

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Any = None,
        status_code: int | None = None,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.status_code = status_code
        self.response = response
        if code is not None:
            self.code = code  # a code this client does not know, on the base class

    def __str__(self) -> str:
        return f"{self.code or 'error'} ({self.status_code}): {self.message}"


class Unauthenticated(KindmemError):
    """401: no credential, or a bad, revoked or expired one."""

    code = "unauthenticated"


class Forbidden(KindmemError):
    """403: this credential may not do that."""

    code = "forbidden"


class NotFound(KindmemError):
    """404: no such resource, or not one this credential may read."""

    code = "not-found"


class FactNotFound(NotFound):
    """404: no such fact, or not one this credential may read (the two look the same)."""

    code = "fact-not-found"


class ValidationError(KindmemError):
    """400: the request is not valid; `details` says which fields and why."""

    code = "validation-error"


class InvalidFact(KindmemError):
    """400: the fact is not valid (an undeclared type, an empty or too long text, ...)."""

    code = "invalid-fact"


class MethodNotAllowed(KindmemError):
    code = "method-not-allowed"


class NotAcceptable(KindmemError):
    code = "not-acceptable"


class UnsupportedMediaType(KindmemError):
    code = "unsupported-media-type"


class Conflict(KindmemError):
    """409: someone else changed it first (`expected_version`, a decision taken twice)."""

    code = "conflict"


class StaleApproval(KindmemError):
    """409: the memory waiting for review was computed from a version of its fact that is no
    longer current (edited, deleted, erased since); approving it would undo that, so nothing
    changed. `details`: `base_version`, `current_version`, `change`. Reject it instead."""

    code = "stale-approval"


class RetentionViolation(KindmemError):
    """409: retention forbids the change (legal hold, keep_until, keep_days)."""

    code = "retention-violation"


class ErasureInProgress(KindmemError):
    """409: an erasure for this person runs; nothing new lands until it ends."""

    code = "erasure-in-progress"


class MemoryLimitReached(KindmemError):
    """409: the run wrote as many memories as one run may; a new run may write more."""

    code = "memory-limit-reached"


class LinkExpired(KindmemError):
    """410: the export's download link has expired; ask for the request again."""

    code = "link-expired"


class RequestTooLarge(KindmemError):
    code = "request-too-large"


class UriTooLong(KindmemError):
    code = "uri-too-long"


class HeadersTooLarge(KindmemError):
    code = "headers-too-large"


class RateLimited(KindmemError):
    """429: too many writes for this credential. `retry_after` is the server's `Retry-After`
    in seconds (None if it sent none); raised once the client's bounded retries are spent."""

    code = "rate-limited"

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.response) if self.response is not None else None


class EmbeddingUnavailable(KindmemError):
    """503: semantic search needs an embedder, and none is configured or answering."""

    code = "embedding-unavailable"


class ExtractionUnavailable(KindmemError):
    """503: extraction needs the operator's chat model, and none is configured or answering."""

    code = "extraction-unavailable"


class ExtractionQuota(KindmemError):
    """429: the tenant's extraction tokens for the day, or the conversation's, are spent.
    `retry_after` is the server's `Retry-After` in seconds: the next day for the daily cap,
    None for a conversation's (waiting does not help). Never retried by the client."""

    code = "extraction-quota"

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.response) if self.response is not None else None


class Unavailable(KindmemError):
    """503: the server's database is saturated or out of reach; `retry_after` is the server's
    `Retry-After` in seconds. Raised once the client's bounded retries are spent."""

    code = "unavailable"

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.response) if self.response is not None else None


class PersistenceError(KindmemError):
    """500: the server could not complete the request."""

    code = "persistence-error"


class NotImplementedByServer(KindmemError):
    code = "not-implemented"


class UnexpectedResponse(KindmemError):
    """An error answer that is not in kindmem's error shape (a proxy, a load balancer)."""

    code = "unexpected-response"


# code -> class, for every code of the vocabulary (docs/api.md, api/errors.py).
CODES: dict[str, type[KindmemError]] = {
    cls.code: cls
    for cls in (
        Unauthenticated,
        Forbidden,
        NotFound,
        FactNotFound,
        ValidationError,
        InvalidFact,
        MethodNotAllowed,
        NotAcceptable,
        UnsupportedMediaType,
        Conflict,
        StaleApproval,
        RetentionViolation,
        ErasureInProgress,
        MemoryLimitReached,
        LinkExpired,
        RequestTooLarge,
        UriTooLong,
        HeadersTooLarge,
        RateLimited,
        EmbeddingUnavailable,
        ExtractionUnavailable,
        ExtractionQuota,
        Unavailable,
        PersistenceError,
        NotImplementedByServer,
    )
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds: a number of seconds or an HTTP date; None if absent or bad."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    date = response.headers.get("Date")
    now = parsedate_to_datetime(date) if date else None
    if now is None or at.tzinfo is None or now.tzinfo is None:
        return None
    return max(0.0, (at - now).total_seconds())


def error_from_response(response: httpx.Response) -> KindmemError:
    """The exception for an error answer (status >= 400)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("code"), str):
        return UnexpectedResponse(
            f"HTTP {response.status_code}: {response.text[:200]}",
            status_code=response.status_code,
            response=response,
        )
    code = body["code"]
    message = str(body.get("message") or code)
    cls = CODES.get(code)
    kwargs: dict[str, Any] = {
        "details": body.get("details"),
        "status_code": response.status_code,
        "response": response,
    }
    if cls is None:
        return KindmemError(message, code=code, **kwargs)
    return cls(message, **kwargs)
