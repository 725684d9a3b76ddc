"""Memory files imported (`POST /v1/facts/import`): the files of an upload
(facts/memory_uploads.py), each checked as a write (facts/memory_import_plan.py, which says what
a file becomes), written through the facts write path as the importing credential, then the
links between them.

What a file never decides: who wrote it. The new revision is attributed to the importing
credential, its trust is the write's (an agent's run writes `unverified`, and its wide or
instruction-like content waits for review, as any write of its does), its record times are now.
The provenance the file claims (`source`, `by`, kindmem's `attributed_to`, `trust`, `verified_*`,
`generated_by`, `revision`) and its transaction-time fields (`created`, `updated`, `seq`,
`contentHash`, `embeddingRef`) are the other store's record of itself: they are dropped, not
kept in the new revision's `source`. That field is the content's Kind-B source, which dedup
compares (the same content imported from two files would otherwise be two different writes),
and a claim cannot be checked; the import itself is on record in the audit stream (one write
event naming every fact it touched).

Idempotent: a file whose content the scope already holds is `unchanged` (the write path's
content-hash dedup, and the same rule for a keyless fact of an `entity`-deduplicated type, whose
write path never dedups); one that brings something the fact lacks (tags, a retention, subjects,
a source) is that fact's next revision (`superseded`).

All or nothing: every file is parsed and checked before anything is written, and any file that
is refused refuses the import (400 naming the file and the field; a refusal of the write path,
such as a scope the credential may not write into, keeps its own code), with nothing written.
Links between imported facts are made once both ends are (the files' ids mapped to the new
facts'); a link to a fact the import does not bring, or from or to a fact that waits for
review, is dropped and reported.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from api.errors import FactNotFound, KindmemError
from api.transactions import service_atomic
from facts import services
from facts.authority import Door
from facts.links import link_create
from facts.memory_import_plan import WRITE_FIELDS, Planned, in_file
from facts.models import DedupScope, Revision, WritePolicy
from facts.provenance import content_hash
from facts.scopes import SCOPE_KEYS, resolve_scope
from kindmem.access import Principal, readers_for


@dataclass(frozen=True)
class FileImported:
    file: str
    id: str  # the file's own id
    outcome: services.Outcome
    fact_id: uuid.UUID
    revision_id: uuid.UUID
    reasons: list[str]
    approval_id: uuid.UUID | None

    @property
    def review(self) -> dict[str, list[str]] | None:
        return {"reasons": self.reasons} if self.reasons else None


@dataclass(frozen=True)
class LinkImported:
    file: str
    type: str
    target: str  # the file's id of the target
    outcome: str  # created | unchanged | dropped
    reason: str | None = None  # dropped: target-not-imported | waits-for-review | not-readable
    link_id: uuid.UUID | None = None
    source_fact_id: uuid.UUID | None = None
    target_fact_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Imported:
    files: list[FileImported]
    links: list[LinkImported]


def _file_error(name: str, exc: KindmemError) -> KindmemError:
    """The write path's refusal of one file, naming the file (its code and status kept)."""
    details: Any = exc.details
    if isinstance(details, Mapping) and all(isinstance(k, str) for k in details):
        details = {"file": name, "fields": in_file(details, WRITE_FIELDS)}
    else:
        details = {"file": name, "details": details}
    error = type(exc)(f"{name}: {exc.message}", details=details)
    error.code, error.status_code = exc.code, exc.status_code
    return error


def _entity_repeat(
    principal: Principal,
    write: Mapping[str, Any],
    taken: set[uuid.UUID],
    dedup_scopes: dict[str, str],
) -> Revision | None:
    """For a keyless fact of an `entity`-deduplicated type (whose write path dedups nothing), the
    live fact of the scope with that content that no other file of this import has taken.
    `dedup_scopes` keeps each type's dedup scope for the import (one read per type)."""
    if write.get("key") is not None:
        return None
    if write["type"] not in dedup_scopes:
        policy = (
            WritePolicy.objects.filter(tenant_id=principal.tenant_id, fact_type=write["type"])
            .order_by("pk")
            .first()
        )
        dedup_scopes[write["type"]] = services.dedup_scope_of(policy)
    if dedup_scopes[write["type"]] != DedupScope.ENTITY:
        return None
    resolved = resolve_scope(principal.tenant_id, write.get("scope") or {})
    hash_ = content_hash(write["content"], write.get("valid_from"), write.get("valid_until"))
    return (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers_for(principal))
        .filter(fact__type=write["type"], fact__key__isnull=True, content_hash=hash_)
        .filter(**{f"fact__{k}": resolved[k] for k in SCOPE_KEYS})
        .exclude(fact_id__in=taken)
        .order_by("pk")
        .first()
    )


def _write(
    principal: Principal, item: Planned, taken: set[uuid.UUID], dedup_scopes: dict[str, str]
) -> services.WriteResult:
    # a file's retention and subjects are checked as a file's and as its importer's
    # (`facts.authority`: the import column)
    repeat = _entity_repeat(principal, item.write, taken, dedup_scopes)
    if repeat is None:
        return services.fact_create(principal=principal, door=Door.IMPORT, **item.write)
    again = {k: v for k, v in item.write.items() if k not in {"type", "scope", "key"}}
    return services.fact_supersede(
        principal=principal, fact_id=repeat.fact_id, door=Door.IMPORT, **again
    )


@service_atomic
def facts_import(*, principal: Principal, planned: Sequence[Planned]) -> Imported:
    """Write the planned files as `principal` (`fact_create`, in file order), then the links
    between them; all or nothing (the module docstring)."""
    files: list[FileImported] = []
    new_ids: dict[str, uuid.UUID] = {}
    waiting: set[uuid.UUID] = set()
    taken: set[uuid.UUID] = set()
    dedup_scopes: dict[str, str] = {}
    for item in planned:
        try:
            result = _write(principal, item, taken, dedup_scopes)
        except KindmemError as exc:
            raise _file_error(item.name, exc) from None
        revision = result.revision
        new_ids[item.id] = revision.fact_id
        taken.add(revision.fact_id)
        if result.outcome == services.Outcome.CREATED and result.approval_id is not None:
            waiting.add(revision.fact_id)  # no live revision yet: nothing to link to or from
        files.append(
            FileImported(
                file=item.name,
                id=item.id,
                outcome=result.outcome,
                fact_id=revision.fact_id,
                revision_id=revision.pk,
                reasons=list(result.reasons),
                approval_id=result.approval_id,
            )
        )
    links: list[LinkImported] = []
    for item in planned:
        source = new_ids[item.id]
        for edge in item.edges:
            target = new_ids.get(edge.target)
            said: dict[str, Any] = {"file": item.name, "type": edge.type, "target": edge.target}
            if target is None:
                links.append(LinkImported(**said, outcome="dropped", reason="target-not-imported"))
                continue
            if source in waiting or target in waiting:
                links.append(
                    LinkImported(
                        **said,
                        outcome="dropped",
                        reason="waits-for-review",
                        source_fact_id=source,
                        target_fact_id=target,
                    )
                )
                continue
            try:
                link, created = link_create(
                    principal=principal,
                    source_id=source,
                    target_id=target,
                    type=edge.type,
                    **edge.fields,
                )
            except FactNotFound:
                # an end this import wrote and then lost (a bounded ring's cull evicted it)
                links.append(LinkImported(**said, outcome="dropped", reason="not-readable"))
                continue
            except KindmemError as exc:
                raise _file_error(item.name, exc) from None
            links.append(
                LinkImported(
                    **said,
                    outcome="created" if created else "unchanged",
                    link_id=link.pk,
                    source_fact_id=source,
                    target_fact_id=target,
                )
            )
    return Imported(files=files, links=links)
