"""The one error shape, `{"code", "message", "details"}`, and the exceptions that produce it.

Codes are the seed's (`invalid-fact`, `fact-not-found`, `retention-violation`,
`erasure-in-progress`, `embedding-unavailable`, `persistence-error`, ...) plus the API's own
(`unauthenticated`, `forbidden`, `validation-error`, `not-found`, `method-not-allowed`,
`unsupported-media-type`, `rate-limited`, `unavailable`, `conflict`, `stale-approval`).
Services raise `KindmemError` subclasses; one DRF exception handler renders every error, so no
view builds an error body by hand.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class KindmemError(Exception):
    code = "persistence-error"
    status_code: int = status.HTTP_500_INTERNAL_SERVER_ERROR
    default_message = "The request could not be completed."

    def __init__(self, message: str | None = None, *, details: Any = None) -> None:
        self.message = message or self.default_message
        self.details = details
        super().__init__(self.message)


class ValidationFailed(KindmemError):
    code = "validation-error"
    status_code = status.HTTP_400_BAD_REQUEST
    default_message = "The request is not valid."


class InvalidFact(KindmemError):
    code = "invalid-fact"
    status_code = status.HTTP_400_BAD_REQUEST
    default_message = "The fact is not valid."


class NotFound(KindmemError):
    code = "not-found"
    status_code = status.HTTP_404_NOT_FOUND
    default_message = "Not found."


class FactNotFound(NotFound):
    code = "fact-not-found"
    default_message = "No such fact, or not one this credential may read."


class Forbidden(KindmemError):
    code = "forbidden"
    status_code = status.HTTP_403_FORBIDDEN
    default_message = "This credential may not do that."


class RetentionViolation(KindmemError):
    code = "retention-violation"
    status_code = status.HTTP_409_CONFLICT
    default_message = "Retention forbids this change."


class Conflict(KindmemError):
    code = "conflict"
    status_code = status.HTTP_409_CONFLICT
    default_message = "Someone else changed this first; read it again and retry."


class StaleApproval(KindmemError):
    """A value waiting for review was computed from a version of its fact that is no longer the
    fact's (edited, patched, verified, deleted or erased since): approving it would overwrite
    that later write, so nothing changes. Beside `conflict` (also 409), which says a decision
    or an `expected_version` lost a race; this one says the approval itself is out of date.
    `details`: `base_version` (what it was computed from), `current_version` (the fact's
    approved value now, None when it has none) and `change` (`changed`, `deleted`, `erased`)."""

    code = "stale-approval"
    status_code = status.HTTP_409_CONFLICT
    default_message = "The fact changed since this memory was written; approving it would undo it."


class ErasureInProgress(KindmemError):
    code = "erasure-in-progress"
    status_code = status.HTTP_409_CONFLICT
    default_message = "An erasure for this person is in progress; nothing new lands until it ends."


class MemoryLimitReached(KindmemError):
    """A run wrote as many memories as it may (KINDMEM_MAX_MEMORIES_PER_RUN). 409, not 429:
    waiting does not help, only a new run does."""

    code = "memory-limit-reached"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This run has written as many memories as one run may."


class EmbeddingUnavailable(KindmemError):
    code = "embedding-unavailable"
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_message = "Semantic search needs an embedder, and none is configured or answering."


class ExtractionUnavailable(KindmemError):
    """Extraction needs the operator's chat model (KINDMEM_LLM_URL, KINDMEM_LLM_MODEL); without
    one it answers this, never an empty result (as semantic search without an embedder)."""

    code = "extraction-unavailable"
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_message = "Extraction needs a chat model, and none is configured or answering."


class ExtractionQuota(KindmemError):
    """A tenant's extraction tokens for the day, or a conversation's, are spent
    (KINDMEM_EXTRACTION_TENANT_DAILY_TOKENS, KINDMEM_EXTRACTION_CONVERSATION_TOKENS). The daily
    cap answers Retry-After (the next UTC day); a conversation's never comes back by waiting."""

    code = "extraction-quota"
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_message = "The extraction quota is spent."

    def __init__(
        self, message: str | None = None, *, details: Any = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message, details=details)
        self.retry_after = retry_after


class Unavailable(KindmemError):
    """The database is saturated or out of reach: a moment later may succeed (Retry-After)."""

    code = "unavailable"
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_message = "kindmem is busy or its database is out of reach; retry after a moment."
    retry_after_seconds = 1


# SQLSTATEs that say the server cannot take this connection or this session now: too many
# connections (53300) and the other resource limits (53...), a server starting up or shutting
# down (57P01-57P03), a connection failure (08...). Not a statement's own failure (a timeout,
# a serialization failure, a constraint): those are the request's, not the service's.
_UNAVAILABLE_SQLSTATES = ("53", "57P01", "57P02", "57P03", "08")


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` says the database is saturated or out of reach (a pool that had no free
    connection in time, a server refusing connections), not that the request was wrong."""
    import psycopg
    from django.db import InterfaceError, OperationalError
    from psycopg_pool import PoolTimeout, TooManyRequests

    if isinstance(exc, OperationalError | InterfaceError):
        exc = exc.__cause__ or exc
    if isinstance(exc, PoolTimeout | TooManyRequests):
        return True
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        sqlstate = getattr(exc, "sqlstate", None)
        # no SQLSTATE: the client's own failure to connect or to use the connection
        return sqlstate is None or sqlstate.startswith(_UNAVAILABLE_SQLSTATES)
    return False


_RETRY_AFTER = {"Retry-After": str(Unavailable.retry_after_seconds)}


def _log_unavailable(exc: BaseException) -> None:
    logger.warning("unavailable: %s: %s", type(exc.__cause__ or exc).__name__, exc)


def unavailable_response(exc: BaseException) -> HttpResponse:
    """The 503 of a saturated or unreachable database, logged as one line (no traceback)."""
    _log_unavailable(exc)
    return error_response(
        Unavailable.code,
        Unavailable.default_message,
        status=Unavailable.status_code,
        headers=_RETRY_AFTER,
    )


class OneLineUnavailable(logging.Filter):
    """A logging filter: a request that failed because the database is saturated or out of
    reach is one line in the log, not a traceback per request (Django logs every 5xx with its
    exception)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_unavailable(exc):
            record.msg, record.args = "%s (unavailable: %s)", (record.getMessage(), exc)
            record.exc_info = None
            record.exc_text = None
        return True


class PersistenceError(KindmemError):
    code = "persistence-error"
    status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
    default_message = "The store could not complete the request."


class RequestTooLarge(KindmemError):
    """More than a request may carry once unpacked (an archive's files, their size): 413, as
    for a body over KINDMEM_MAX_BODY_BYTES (api/limits.py answers that one itself)."""

    code = "request-too-large"
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_message = "The request carries more than kindmem takes at once."


class UnsupportedMediaType(KindmemError):
    """A body, or a part of one (an archive's entry), in a format kindmem does not read."""

    code = "unsupported-media-type"
    status_code = status.HTTP_415_UNSUPPORTED_MEDIA_TYPE
    default_message = "This format is not read here."


class LinkExpired(KindmemError):
    code = "link-expired"
    status_code = status.HTTP_410_GONE
    default_message = "This download link has expired; ask for a new one."


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"code": code, "message": message, "details": details}


def error_response(
    code: str,
    message: str,
    details: Any = None,
    *,
    status: int,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    """The error shape answered outside a DRF view (a middleware, Django's handlers), written
    by the API's own renderer so that its bytes match every other error's."""
    from api.renderers import ApiJSONRenderer

    return HttpResponse(
        ApiJSONRenderer().render(error_body(code, message, details)),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _drf_code(exc: exceptions.APIException) -> str:
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return "unauthenticated"
    if isinstance(exc, exceptions.PermissionDenied):
        return "forbidden"
    if isinstance(exc, exceptions.NotFound):
        return "not-found"
    if isinstance(exc, exceptions.MethodNotAllowed):
        return "method-not-allowed"
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return "unsupported-media-type"
    if isinstance(exc, exceptions.NotAcceptable):
        return "not-acceptable"
    if isinstance(exc, exceptions.Throttled):
        return "rate-limited"
    return "validation-error"  # ParseError, ValidationError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: every error in the one shape."""
    if is_unavailable(exc):
        _log_unavailable(exc)
        return Response(
            error_body(Unavailable.code, Unavailable.default_message),
            status=Unavailable.status_code,
            headers=_RETRY_AFTER,
        )
    if isinstance(exc, KindmemError):
        if exc.status_code >= 500:
            logger.error("%s: %s", exc.code, exc.message)
        retry_after = getattr(exc, "retry_after", None)
        return Response(
            error_body(exc.code, exc.message, exc.details),
            status=exc.status_code,
            headers={"Retry-After": str(retry_after)} if retry_after else None,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug: let Django log it and answer 500 (handler500 keeps the shape)
    headers: dict[str, str] = {}
    if isinstance(exc, exceptions.AuthenticationFailed | exceptions.NotAuthenticated):
        headers["WWW-Authenticate"] = 'Bearer realm="kindmem"'
    wait = getattr(exc, "wait", None)  # Throttled sets it; the stubs do not declare it
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        headers["Retry-After"] = str(int(wait) + 1)
    details = exc.detail if isinstance(exc, exceptions.ValidationError) else None
    message = exc.detail if isinstance(exc.detail, str) else str(exc.default_detail)
    if isinstance(exc, exceptions.ValidationError):
        message = "The request is not valid; see details."
    status_code = exc.status_code
    if isinstance(exc, exceptions.NotAuthenticated):
        status_code = status.HTTP_401_UNAUTHORIZED
    return Response(
        error_body(_drf_code(exc), str(message), details), status=status_code, headers=headers
    )


def json_not_found(request: Any, exception: Exception | None = None) -> HttpResponse:
    return error_response("not-found", "Not found.", status=404)


def json_server_error(request: Any) -> HttpResponse:
    """handler500: what Django answers for an exception no view handled (the console's pages,
    a middleware's query): 503 with Retry-After when the database is what failed."""
    exc = sys.exc_info()[1]
    if exc is not None and is_unavailable(exc):
        return unavailable_response(exc)
    return error_response(
        "persistence-error", "The server failed to complete the request.", status=500
    )


def json_bad_request(request: Any, exception: Exception | None = None) -> HttpResponse:
    return error_response("validation-error", "Bad request.", status=400)
