"""Links between facts (the 003 seed's attributed IEdge) and traversal along them, only
through facts the caller may read."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from api.errors import FactNotFound, InvalidFact
from facts.agent_writes import check_run_may_alter
from facts.models import Link, Revision
from facts.provenance import attribution_of
from facts.review import HIDDEN_CHARACTERS, INSTRUCTION_LIKE, agent_write_review
from facts.revisions import lock_current
from kindmem.access import Principal, Readers, readers_for

MAX_HOPS = 5


@dataclass(frozen=True)
class Reached:
    """One fact a link traversal reached: how many hops away, and the link that reached it."""

    revision: Revision
    hops: int
    link: Link


def readable_fact_ids(principal: Principal, readers: Readers) -> Any:
    return (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .values("fact_id")
    )


@transaction.atomic
def link_create(
    *,
    principal: Principal,
    source_id: uuid.UUID | str,
    target_id: uuid.UUID | str,
    type: str,
    confidence: float | None = None,
    provenance: Any = None,
    valid_at: datetime | None = None,
    invalid_at: datetime | None = None,
) -> tuple[Link, bool]:
    """Link one readable fact to another (the 003 seed's attributed IEdge). The same
    (source, target, type) again returns the existing link (`False`: nothing written)."""
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidFact(details={"confidence": ["Must be between 0 and 1."]})
    source, _ = lock_current(principal, source_id)
    _check_link_text(principal, source, {"type": type, "provenance": provenance})
    readers = readers_for(principal)
    try:
        target_ident = uuid.UUID(str(target_id))
    except ValueError:
        raise FactNotFound(details={"target": str(target_id)}) from None
    if not readable_fact_ids(principal, readers).filter(fact_id=target_ident).exists():
        raise FactNotFound(
            "No such target fact, or not one this credential may read.",
            details={"target": str(target_id)},
        )
    existing = Link.objects.filter(
        tenant_id=principal.tenant_id, source=source, target_id=target_ident, type=type
    ).first()
    if existing is not None:
        return existing, False
    who = attribution_of(principal)
    try:
        with transaction.atomic():
            link = Link.objects.create(
                tenant_id=principal.tenant_id,
                source=source,
                target_id=target_ident,
                type=type,
                confidence=confidence,
                provenance=provenance,
                valid_at=valid_at,
                invalid_at=invalid_at,
                created_by=who.label,
            )
    except IntegrityError:  # a concurrent identical link won the unique constraint
        return Link.objects.get(
            tenant_id=principal.tenant_id, source=source, target_id=target_ident, type=type
        ), False
    return link, True


def _check_link_text(principal: Principal, fact: Any, link: dict[str, Any]) -> None:
    """A link's type and provenance are read back by everyone who reads its facts, and a link
    has no review of its own: what the write gate would hold for review in an agent's write is
    refused here (write it as a fact, which a reviewer can see), nothing written."""
    needed = agent_write_review().needed(principal, fact, {"link": link})
    held = [r for r in needed.reasons if r in (INSTRUCTION_LIKE, HIDDEN_CHARACTERS)]
    if held:
        raise InvalidFact(
            "A link of an agent's run cannot wait for review, and this one would:"
            " its type or provenance reads like an instruction or hides characters.",
            details={"reasons": held, "fields": sorted(link)},
        )


# What a link update may change; its ends and type are what it is (delete and link anew).
LINK_MUTABLE = ("confidence", "provenance", "valid_at", "invalid_at")


def _own_link(principal: Principal, fact_id: uuid.UUID | str, link_id: uuid.UUID | str) -> Link:
    """The link `link_id` out of the readable fact `fact_id`, row-locked; `fact-not-found` when
    the fact may not be read or has no such link (indistinguishable). An agent's run changes
    only links of facts it may alter."""
    source, current = lock_current(principal, fact_id)
    check_run_may_alter(principal, source, current)
    try:
        ident = uuid.UUID(str(link_id))
    except ValueError:
        raise FactNotFound("No such link on this fact.") from None
    link = (
        Link.objects.select_for_update()
        .filter(tenant_id=principal.tenant_id, source=source, pk=ident)
        .first()
    )
    if link is None:
        raise FactNotFound("No such link on this fact.")
    return link


@transaction.atomic
def link_update(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    link_id: uuid.UUID | str,
    changes: dict[str, Any],
) -> Link:
    """Change a link's confidence, provenance or validity (`invalid_at` ends it: traversal no
    longer follows it from then). Fields left out are kept; `None` clears one."""
    link = _own_link(principal, fact_id, link_id)
    if "provenance" in changes:
        _check_link_text(principal, link.source, {"provenance": changes["provenance"]})
    for name in LINK_MUTABLE:
        if name in changes:
            setattr(link, name, changes[name])
    if link.valid_at and link.invalid_at and link.invalid_at <= link.valid_at:
        raise InvalidFact(details={"invalid_at": ["Must be after valid_at."]})
    link.save(update_fields=[n for n in LINK_MUTABLE if n in changes])
    return link


@transaction.atomic
def link_delete(
    *, principal: Principal, fact_id: uuid.UUID | str, link_id: uuid.UUID | str
) -> Link:
    """Remove a link (the facts stay). Answers the link as it was."""
    link = _own_link(principal, fact_id, link_id)
    removed = Link(**{f.attname: getattr(link, f.attname) for f in Link._meta.concrete_fields})
    link.delete()
    return removed


def link_traverse(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    hops: int = 1,
    direction: str = "out",
    type: str | None = None,
    at: datetime | None = None,
    order: str = "nearest",
    limit: int | None = None,
    fact_type: str | None = None,
    tag: str | None = None,
    scope: dict[str, Any] | None = None,
) -> list[Reached]:
    """Breadth-first from a readable fact along its links (`out`: to targets, `in`: from
    sources), up to `hops` levels, cycle-safe (a visited fact is never expanded twice), only
    through facts the caller may read: an unreadable fact is neither returned nor crossed.
    Only links valid `at` (now unless told) are followed: not before their `valid_at`, not
    from their `invalid_at` on. One query per level, plus one for the reached revisions.

    The reached facts are then filtered like a query (the seed's post-filter: `fact_type`,
    `tag`, exact scope keys) and ordered `nearest` first (by hops, then link age) or by
    `recency` (the reached fact's current revision, newest first), at most `limit`."""
    readers = readers_for(principal)
    at = at or timezone.now()
    try:
        seed = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    readable = readable_fact_ids(principal, readers)
    if not readable.filter(fact_id=seed).exists():
        raise FactNotFound()
    near, far = ("source_id", "target_id") if direction == "out" else ("target_id", "source_id")
    visited = {seed}
    frontier = {seed}
    reached: list[tuple[uuid.UUID, int, Link]] = []
    for level in range(1, min(hops, MAX_HOPS) + 1):
        if not frontier:
            break
        edges = Link.objects.filter(tenant_id=principal.tenant_id, **{f"{near}__in": frontier})
        edges = edges.filter(**{f"{far}__in": readable})
        edges = edges.filter(Q(valid_at__isnull=True) | Q(valid_at__lte=at))
        edges = edges.filter(Q(invalid_at__isnull=True) | Q(invalid_at__gt=at))
        if type:
            edges = edges.filter(type=type)
        frontier = set()
        for link in edges.order_by("created_at", "id"):
            other = getattr(link, far)
            if other in visited:
                continue
            visited.add(other)
            frontier.add(other)
            reached.append((other, level, link))
    wanted = (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .filter(fact_id__in=[fid for fid, _, _ in reached])
    )
    if fact_type:
        wanted = wanted.filter(fact__type=fact_type)
    if tag:
        wanted = wanted.filter(fact__tags__contains=[tag])
    for name, value in (scope or {}).items():
        wanted = wanted.filter(**{f"fact__{name}": value})
    revisions = {r.fact_id: r for r in wanted.select_related("fact").prefetch_related("subjects")}
    found = [
        Reached(revision=revisions[fid], hops=level, link=link)
        for fid, level, link in reached
        if fid in revisions
    ]
    if order == "recency":
        found.sort(key=lambda r: (r.revision.created_at, r.revision.pk), reverse=True)
    return found[:limit] if limit else found
