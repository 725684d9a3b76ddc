"""Request limits: the body size (before anything is parsed) and per-credential write rates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.throttling import SimpleRateThrottle

from kindmem.access import Principal
from kindmem.errors import error_body

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class BodySizeLimitMiddleware:
    """Refuse a /v1 body over KINDMEM_MAX_BODY_BYTES with 413 before it is read.

    DRF's parsers read the request stream directly, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    alone would not stop a large JSON body.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/v1/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if length > limit:
                return JsonResponse(
                    error_body(
                        "request-too-large",
                        f"The request body is {length} bytes; the limit is {limit}.",
                        {"limit": limit},
                    ),
                    status=413,
                )
        return self.get_response(request)


class CredentialWriteThrottle(SimpleRateThrottle):
    """Writes per credential (an API key, or one run), counted in the shared cache (the
    database or Redis), so every web process counts the same budget."""

    scope = "writes"

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        # A search sent as POST (a body for its filters) is a read: views say so.
        if request.method in SAFE_METHODS or getattr(view, "reads_only", False):
            return None
        principal = request.auth
        if not isinstance(principal, Principal):
            return None
        return self.cache_format % {"scope": self.scope, "ident": principal.id}
