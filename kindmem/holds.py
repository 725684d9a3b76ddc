"""Erasure holds: the check every write path makes before it lands anything for a person."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db.models import Q

from kindmem.errors import ErasureInProgress
from kindmem.models import ErasureHold


def held_subjects(
    tenant_id: uuid.UUID, subjects: Iterable[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Those of `subjects` ((kind, id) pairs) that an erasure in progress holds."""
    wanted = {(kind, str(sid)) for kind, sid in subjects if sid}
    if not wanted:
        return set()
    condition = Q()
    for kind, sid in wanted:
        condition |= Q(subject_kind=kind, subject_id=sid)
    rows = ErasureHold.objects.filter(condition, tenant_id=tenant_id).values_list(
        "subject_kind", "subject_id"
    )
    return set(rows)


def assert_not_held(tenant_id: uuid.UUID, subjects: Iterable[tuple[str, str]]) -> None:
    """Raise `erasure-in-progress` (409) if any of `subjects` is held; call it inside the
    write's transaction, before anything is written."""
    held = held_subjects(tenant_id, subjects)
    if held:
        raise ErasureInProgress(details={"subjects": [f"{k}:{i}" for k, i in sorted(held)]})
