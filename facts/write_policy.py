"""A type's write policy, as a write reads it: the content's schema, how its writes dedup (seed
003's `DedupScope`) and the live revision a write would repeat, the bounded ring's size."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.utils import timezone

from api.content_schema import check_content
from compiled import compiled
from facts.models import (
    DedupScope,
    Fact,
    Revision,
    WritePolicy,
    WritePolicyKind,
)
from facts.provenance import content_hash
from facts.revisions import (
    Draft,
)
from facts.scopes import (
    scope_of,
)
from kindmem.access import Readers


def type_content_schema(tenant_id: uuid.UUID, type: str) -> dict[str, Any] | None:
    """The tenant's JSON Schema for this type's content (its write policy's), if it has one."""
    policy = write_policy_query(tenant_id, type).first()
    return policy.content_schema if policy else None


@compiled()
def write_policy_query(tenant_id: uuid.UUID, type: str) -> Any:
    return WritePolicy.objects.filter(tenant_id=tenant_id, fact_type=type).order_by("pk")[:1]


def checked_write_policy(tenant_id: uuid.UUID, type: str, content: Any) -> WritePolicy | None:
    """The type's write policy, once the content fits its schema."""
    policy = write_policy_query(tenant_id, type).first()
    check_content([policy.content_schema if policy else None], content, type=type)
    return policy


def cap_of(policy: WritePolicy | None) -> int | None:
    """The bounded ring's size, for a cap-cull type."""
    if policy is not None and policy.policy == WritePolicyKind.CAP_CULL:
        return policy.max_records
    return None


def dedup_scope_of(policy: WritePolicy | None) -> str:
    """How a type's writes dedup (seed 003's `DedupScope`): as its policy says, else `slot`
    for last-write-wins (kindmem's default, docs/facts.md "Dedup": a slot's key is part of what a
    fact is, so equal values of two slots stay two facts) and `entity` for a bounded ring (the
    seed's: two equal turns of a conversation are two records)."""
    if policy is not None and policy.dedup_scope:
        return policy.dedup_scope
    if policy is not None and policy.policy == WritePolicyKind.CAP_CULL:
        return DedupScope.ENTITY
    return DedupScope.SLOT


def duplicate(dedup: str, fact: Fact, draft: Draft, readers: Readers) -> Revision | None:
    """The live, readable revision this write of `fact` would repeat, by the content's hash,
    under the type's dedup scope."""
    if dedup == DedupScope.ENTITY and fact.key is None:
        return None  # a keyless write is a new entity: never collapsed into another
    hash_ = content_hash(draft.content, draft.valid_from, draft.valid_until)
    same = {f"fact__{k}": v for k, v in scope_of(fact).items()}
    now = timezone.now()
    if dedup == DedupScope.CONTENT:
        return _same_content(fact.tenant_id, fact.type, hash_, same, readers, now).first()
    return _same(fact.tenant_id, fact.type, fact.key, hash_, same, readers, now).first()


# The dedup's two guarded reads: by the content's hash, its index the plan whatever the values
# (a generic plan)
@compiled(generic=True)
def _same_content(
    tenant_id: uuid.UUID,
    type: str,
    hash_: str,
    same: dict[str, Any],
    readers: Readers,
    now: datetime,
) -> Any:
    """`.first()` of the reader's live revisions of that type and scope with that content,
    under any slot key."""
    return (
        Revision.objects.of_tenant(tenant_id)
        .live(now)
        .filter(fact__type=type, content_hash=hash_, **same)
        .readable_by(readers)
        .select_related("fact")
        .order_by("pk")[:1]
    )


@compiled(generic=True)
def _same(
    tenant_id: uuid.UUID,
    type: str,
    key: str | None,
    hash_: str,
    same: dict[str, Any],
    readers: Readers,
    now: datetime,
) -> Any:
    """`.first()` of the reader's live revisions of that type, slot, scope and content."""
    return (
        Revision.objects.of_tenant(tenant_id)
        .live(now)
        .filter(fact__type=type, fact__key=key, content_hash=hash_, **same)
        .readable_by(readers)
        .select_related("fact")
        .order_by("pk")[:1]
    )
