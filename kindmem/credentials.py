"""API keys and run tokens: minting, hashing, verifying.

A key reads `kmk_<prefix><secret>`, a run token `kmr_<prefix><secret>`: the fixed marker makes a
leaked credential recognisable to secret scanners, the 12-character prefix finds its row in one
indexed lookup, and only the SHA-256 of the whole string is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

API_KEY_MARKER = "kmk_"
RUN_TOKEN_MARKER = "kmr_"  # noqa: S105 - a marker, not a secret
PREFIX_LENGTH = 12
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(marker: str) -> tuple[str, str, str]:
    """A fresh token: (token, prefix, hash)."""
    body = "".join(secrets.choice(_ALPHABET) for _ in range(PREFIX_LENGTH + 40))
    token = marker + body
    return token, body[:PREFIX_LENGTH], hash_secret(token)


def split_token(token: str) -> tuple[str, str] | None:
    """(marker, prefix) of a well-formed token, else None."""
    for marker in (API_KEY_MARKER, RUN_TOKEN_MARKER):
        if token.startswith(marker) and len(token) == len(marker) + PREFIX_LENGTH + 40:
            return marker, token[len(marker) : len(marker) + PREFIX_LENGTH]
    return None


def presented_credential(request: Any) -> tuple[str, str] | None:
    """(marker, prefix) of the well-formed Bearer credential a request carries, else None:
    read from its header alone, before anything is asked of the database."""
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return split_token(token.strip()) if scheme == "Bearer" else None


def matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(token), stored_hash)
