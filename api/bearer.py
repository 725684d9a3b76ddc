"""The credential a request presents, read from its `Authorization` header alone.

A key reads `kmk_<prefix><secret>`, a run token `kmr_<prefix><secret>`: the fixed marker makes a
leaked credential recognisable to secret scanners, and the 12-character prefix finds its row in
one indexed lookup (kindmem/credentials.py mints and verifies them). The limits and the
transaction per request ask only whether a request carries a well-formed one, before anything
is asked of the database.
"""

from __future__ import annotations

from typing import Any

API_KEY_MARKER = "kmk_"
RUN_TOKEN_MARKER = "kmr_"  # noqa: S105 - a marker, not a secret
PREFIX_LENGTH = 12
SECRET_LENGTH = 40


def split_token(token: str) -> tuple[str, str] | None:
    """(marker, prefix) of a well-formed token, else None."""
    for marker in (API_KEY_MARKER, RUN_TOKEN_MARKER):
        if token.startswith(marker) and len(token) == len(marker) + PREFIX_LENGTH + SECRET_LENGTH:
            return marker, token[len(marker) : len(marker) + PREFIX_LENGTH]
    return None


def presented_credential(request: Any) -> tuple[str, str] | None:
    """(marker, prefix) of the well-formed Bearer credential a request carries, else None."""
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return split_token(token.strip()) if scheme == "Bearer" else None
