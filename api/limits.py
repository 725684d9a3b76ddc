"""Request limits: the body size (before anything is parsed), a credential's requests at once,
and per-credential write rates."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends.db import DatabaseCache
from django.db import connections, router
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.connection import ConnectionProxy
from rest_framework.throttling import SimpleRateThrottle

from api.bearer import presented_credential
from api.errors import error_response

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class BodySizeLimitMiddleware:
    """Refuse a body over KINDMEM_MAX_BODY_BYTES with 413 before it is read, and a /v1 body sent
    with a Content-Encoding (gzip, deflate, ...) with 415: no route inflates a body, so one
    would otherwise be parsed as the bytes it is compressed to.

    DRF's parsers read the request stream directly, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    alone would not stop a large JSON body; nor does it count a multipart body's file parts,
    which Django spools to disk whole, and CSRF's check parses any console POST's body before
    anyone has logged in. So the length is checked on every path, the console's too (no page of
    it takes a body near the limit).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if length > limit:
            return error_response(
                "request-too-large",
                f"The request body is {length} bytes; the limit is {limit}.",
                {"limit": limit, "setting": "KINDMEM_MAX_BODY_BYTES"},
                status=413,
            )
        coding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if request.path.startswith("/v1/") and coding not in {"", "identity"}:
            return error_response(
                "unsupported-media-type",
                f"A body encoded as {coding[:40]!r} is not read here: send it uncompressed.",
                {"content_encoding": coding[:40], "accepted": ["identity"]},
                status=415,
            )
        return self.get_response(request)


class CredentialConcurrencyMiddleware:
    """At most KINDMEM_CREDENTIAL_CONCURRENCY requests of one credential at once in this
    process, reads and MCP tool calls included (each tool call is a /v1 request here); the next
    is answered 429 `rate-limited` with Retry-After, before it takes a database connection. So
    one busy or hostile client cannot take every connection of an ASGI process's pool from the
    others. Counted per process, in memory: a gunicorn sync worker runs one request at a time,
    so there the bound is the number of workers; the write throttle counts across processes.
    Keyed by the credential's prefix as presented, before it is checked: a made-up credential
    is one more key, and costs at most its one lookup."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.limit = settings.CREDENTIAL_CONCURRENCY
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        presented = presented_credential(request) if request.path.startswith("/v1/") else None
        if presented is None or self.limit == 0:
            return self.get_response(request)
        key = "".join(presented)
        with self._lock:
            running = self._running.get(key, 0)
            if running >= self.limit:
                refused = True
            else:
                refused = False
                self._running[key] = running + 1
        if refused:
            return error_response(
                "rate-limited",
                f"This credential has {self.limit} requests running here; retry when one"
                " has ended.",
                {"concurrency_limit": self.limit},
                status=429,
                headers={"Retry-After": "1"},
            )
        try:
            return self.get_response(request)
        finally:
            with self._lock:
                left = self._running[key] - 1
                if left:
                    self._running[key] = left
                else:
                    del self._running[key]


class CredentialWriteThrottle(SimpleRateThrottle):
    """Writes per credential (an API key, or one run), counted in the shared cache (the
    database or Redis), so every web process counts the same budget.

    DRF's rule (at most N writes in any window of the period, a log of their times), kept in
    Redis by DRF itself. In the database cache table it is one statement instead of DRF's four
    and a transaction (read the log, count the table, read and update the row): the log is
    pruned, counted and extended in the row's own upsert, which also makes two concurrent
    writes of one credential count each other (DRF's read-then-write did not)."""

    scope = "writes"
    # set by DRF's __init__ from the rate
    num_requests: int
    duration: int

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        # A search sent as POST (a body for its filters) is a read: views say so.
        if request.method in SAFE_METHODS or getattr(view, "reads_only", False):
            return None
        # request.auth is the credential's Principal (kindmem.authentication), None without one
        credential_id = getattr(request.auth, "id", None)
        if credential_id is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": credential_id}

    def allow_request(self, request: Any, view: Any) -> bool:
        backend = (
            caches[DEFAULT_CACHE_ALIAS] if isinstance(self.cache, ConnectionProxy) else self.cache
        )
        if not isinstance(backend, DatabaseCache):
            return super().allow_request(request, view)
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        # Its own rows, never read by Django's cache (their value is not a pickle); its own
        # key prefix, so a row DRF wrote before this change is never read as a log.
        alias = router.db_for_write(backend.cache_model_class)
        with connections[alias].cursor() as cursor:
            cursor.execute(
                _LOG_APPEND.format(table=connections[alias].ops.quote_name(backend._table)),  # type: ignore[attr-defined]
                {
                    "key": f"{LOG_PREFIX}{self.key}",
                    "now": self.now,
                    "since": self.now - self.duration,
                    "limit": self.num_requests,
                    "expires": timezone.now() + timedelta(seconds=self.duration),
                },
            )
            [log] = cursor.fetchone()
        self.history = [float(t) for t in log[1:].strip("{}").split(",") if t]
        return True if log[0] == "y" else self.throttle_failure()


LOG_PREFIX = "kindmem-writes:"
# The row's value is the log: a flag, then its times (float8, newest first) within the period,
# as array text ("y{1733000.5,1732990.25}"). A write is let through, its time put first and the
# flag set to "y", only if fewer than `limit` are logged; else the flag is "n".
_LOG_APPEND = (
    "INSERT INTO {table} AS c (cache_key, value, expires)"
    " VALUES (%(key)s, 'y' || ARRAY[%(now)s::float8]::text, %(expires)s)"
    " ON CONFLICT (cache_key) DO UPDATE SET expires = EXCLUDED.expires, value = ("
    " SELECT CASE WHEN count(*) < %(limit)s"
    " THEN 'y' || (ARRAY[%(now)s::float8] || coalesce(array_agg(t ORDER BY t DESC), '{{}}'))::text"
    " ELSE 'n' || coalesce(array_agg(t ORDER BY t DESC), '{{}}')::text END"
    " FROM unnest(substr(c.value, 2)::float8[]) AS t WHERE t > %(since)s)"
    " RETURNING value"
)
