"""Text PostgreSQL cannot hold, refused where a request enters rather than as a 500 where it
reaches the database.

PostgreSQL's text and jsonb refuse a NUL character, and UTF-8 cannot encode a lone surrogate
(`"\\ud800"` in JSON decodes to one), so psycopg fails on either, whichever column or
parameter it was meant for. Both are refused in one place each: anywhere in a JSON body
(api/parsers.py), in the path and in the query string (the middleware below).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from api.errors import error_response

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
PROBLEM = "contains a NUL character or a lone surrogate, which cannot be stored"


def unstorable_path(value: Any) -> list[str | int] | None:
    """Where in a parsed JSON value a string (a key or a value) holds text PostgreSQL cannot:
    the keys and indexes down to it, or None. Iterative, as a body may nest deeper than
    Python recurses. A key that is itself unstorable ends its path at the object holding it,
    so the answer never echoes it (the error could not be encoded either)."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if UNSTORABLE.search(key):
                    return path
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, i]) for i, child in enumerate(item))
    return None


class StorableRequestMiddleware:
    """Refuse a path or a query string with text PostgreSQL cannot hold, before any view.

    A path: 404 not-found. Every id in a path names a row, and no row can have such an id, so
    no resource is there, as for a path no route matches (and, like one, before the credential
    is looked at: it reveals nothing). Checked here rather than per URL converter so that
    every route, the console's included, is covered by one rule.

    A query string: 400 validation-error, as a bad query parameter is anywhere else. (Django
    decodes a query string's broken UTF-8 to U+FFFD, so only a NUL can arrive this way.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if UNSTORABLE.search(request.path_info):
            return error_response("not-found", "Not found.", status=404)
        for name, values in request.GET.lists():
            if UNSTORABLE.search(name) or any(UNSTORABLE.search(v) for v in values):
                shown = name if not UNSTORABLE.search(name) else "non_field_errors"
                return error_response(
                    "validation-error",
                    "The request is not valid; see details.",
                    {shown: [f"The query parameter {PROBLEM}."]},
                    status=400,
                )
        return self.get_response(request)
