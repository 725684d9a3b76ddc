"""Fixtures for the facts tests: direct row inserts for the property tests (fast, no service
checks), and principals for the service tests."""

from __future__ import annotations

from typing import Any

from facts.models import Fact, Revision, Subject
from facts.services import content_hash


def fact_insert(
    tenant: Any, *, content: Any = "a fact", subjects: tuple = (), **fields: Any
) -> Revision:
    """One fact with one current revision, written straight to the tables."""
    revision_fields = {
        k: fields.pop(k)
        for k in ("review", "expires_at", "valid_from", "valid_until", "keep_days", "legal_hold")
        if k in fields
    }
    fields.setdefault("type", "note")
    fact = Fact.objects.create(tenant=tenant, **fields)
    revision = Revision.objects.create(
        tenant=tenant,
        fact=fact,
        version=1,
        content=content,
        content_hash=content_hash(content, None, None),
        attributed_kind="service",
        attributed_id="test",
        search_text=str(content),
        **revision_fields,
    )
    Subject.objects.bulk_create(
        Subject(tenant=tenant, revision=revision, fact=fact, kind=k, subject_id=i)
        for k, i in subjects
    )
    return revision
