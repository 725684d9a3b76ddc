"""The erasure receipt's reference to its target: recognisable, not identifying.

A completed erasure forgets its target's id (the receipt outlives the data and names no one),
so a typo'd id, or the question "was this person erased?", could no longer be answered. The
receipt keeps instead a keyed hash of the target: HMAC-SHA256, keyed by the deployment's
`SECRET_KEY` (Django's `salted_hmac` with this module's salt), over the tenant and the
canonical subject (`participant:p-42`). Whoever knows an id can check it against a receipt;
whoever reads the database alone cannot enumerate ids against it (short ids such as `p-42`
would fall to a plain or per-row-salted hash in seconds), and the same person in two tenants
gets two unrelated references.

Rotating `SECRET_KEY` keeps old references recognisable as long as the old key stays in
`SECRET_KEY_FALLBACKS`: a lookup tries every key.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.utils.crypto import salted_hmac

from kindmem.subjects import Subject

REFERENCE_SALT = "kindmem.privacy.erasure-target-reference"


def subject_reference(
    *, tenant_id: uuid.UUID | str, subject: Subject, secret: str | None = None
) -> str:
    """The reference of `subject` in `tenant_id` (64 hex characters), under the current key or
    `secret`."""
    return salted_hmac(
        REFERENCE_SALT, f"{tenant_id}\n{subject}", secret=secret, algorithm="sha256"
    ).hexdigest()


def subject_references(*, tenant_id: uuid.UUID | str, subject: Subject) -> list[str]:
    """Its references under the current key and every fallback key (a lookup matches any)."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return [subject_reference(tenant_id=tenant_id, subject=subject, secret=s) for s in secrets]
