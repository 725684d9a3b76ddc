"""API keys and run tokens: minting, hashing, verifying (their format: api/bearer.py).

Only the SHA-256 of the whole token is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from api.bearer import PREFIX_LENGTH, SECRET_LENGTH

_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class NewToken:
    """A fresh token, shown once, with what is stored of it: its prefix (to find the row) and
    the hash of the whole token (to verify it)."""

    token: str
    prefix: str
    hash: str


def new_token(marker: str) -> NewToken:
    body = "".join(secrets.choice(_ALPHABET) for _ in range(PREFIX_LENGTH + SECRET_LENGTH))
    token = marker + body
    return NewToken(token=token, prefix=body[:PREFIX_LENGTH], hash=hash_secret(token))


def matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(token), stored_hash)
