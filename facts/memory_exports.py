"""Facts as memory files (the format: facts/memory_files.py): a revision's envelope and body,
the links an export may name, and the zip of an export."""

from __future__ import annotations

import io
import uuid
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from facts.links import readable_fact_ids
from facts.memory_files import FOLDER, FORMAT, SUFFIX, body_of, epoch_ms, serialize_memory_file
from facts.models import AttributionKind, EmbeddingState, Link, Revision
from kindmem.access import Principal, Readers

# Who wrote it, as the seed's ProvenanceSource names it (its three conventional values).
SOURCES: dict[str, str] = {
    AttributionKind.AGENT.value: "agent",
    AttributionKind.USER.value: "human",
    AttributionKind.SERVICE.value: "host-ingest",
}


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def _review(revision: Revision) -> str | None:
    """`pending` while it waits, `rejected` once a reviewer refused it (it keeps its pending
    flag, invalidated), `approved` once approved, None when it never had to wait."""
    if revision.review is not None and revision.invalidated_at is not None:
        return "rejected"
    return revision.review_state


def _edge_of(link: Link) -> dict[str, Any]:
    """A link as an IEdge: its own provenance (free JSON, whatever its writer gave, or null)
    kept under the extension key of an IProvenance that names who made the link."""
    kind = link.created_by.partition(":")[0]
    provenance: dict[str, Any] = {
        "source": SOURCES.get(kind, kind or "host-ingest"),
        "by": link.created_by.partition(":")[2] or link.created_by,
        "kindmem": {"provenance": link.provenance},
    }
    edge: dict[str, Any] = {"type": link.type, "target": str(link.target_id)}
    if link.confidence is not None:
        edge["confidence"] = link.confidence
    edge["provenance"] = provenance
    if link.valid_at is not None:
        edge["valid_at"] = epoch_ms(link.valid_at)
    if link.invalid_at is not None:
        edge["invalid_at"] = epoch_ms(link.invalid_at)
    return edge


def envelope_of(revision: Revision, links: Iterable[Link], *, seq: int) -> tuple[dict, str]:
    """The envelope and body of one revision of a fact, with the fact's outbound `links`
    (those the reader may follow). Needs `fact` selected and `subjects` prefetched."""
    fact = revision.fact
    body, encoding = body_of(revision.content)
    current = revision.invalidated_at is None and revision.review is None
    kindmem = {
        "format": FORMAT,
        "body": encoding,
        "key": fact.key,
        "scope": fact.scope,
        "subjects": [
            {"kind": s.kind, "id": s.subject_id}
            for s in sorted(revision.subjects.all(), key=lambda s: (s.kind, s.subject_id))
        ],
        "trust": revision.trust,
        "verified_by": revision.verified_by,
        "verified_at": _iso(revision.verified_at),
        "attributed_to": {
            "kind": revision.attributed_kind,
            "id": revision.attributed_id,
            "agent_version": revision.attributed_agent_version,
        },
        "generated_by": None
        if revision.generated_by_run_id is None
        else {
            "run_id": str(revision.generated_by_run_id),
            "step_id": revision.generated_by_step_id,
            "tool_call_id": revision.generated_by_tool_call_id,
        },
        "revision": {
            "id": str(revision.id),
            "version": revision.version,
            "current": current,
            "review": _review(revision),
            "invalidation_reason": revision.invalidation_reason,
        },
        "observed_at": _iso(revision.observed_at),
        "retention": {
            "keep_days": revision.keep_days,
            "keep_until": _iso(revision.keep_until),
            "legal_hold": revision.legal_hold,
            "expires_at": _iso(revision.expires_at),
        },
        "source": revision.source,
    }
    envelope: dict[str, Any] = {
        "id": str(fact.id),
        "entityId": fact.key or str(fact.id),
        "kind": fact.type,
        "tags": list(fact.tags),
        "links": [_edge_of(link) for link in links],
        "created": epoch_ms(fact.created_at),
        "updated": epoch_ms(revision.created_at),
        "seq": seq,
        "contentHash": revision.content_hash,
        "provenance": {
            "source": SOURCES.get(revision.attributed_kind, revision.attributed_kind),
            "by": revision.attributed_id,
            "kindmem": kindmem,
        },
    }
    temporal: dict[str, Any] = {}
    if revision.valid_from is not None:
        temporal["valid_at"] = epoch_ms(revision.valid_from)
    if revision.valid_until is not None:
        temporal["invalid_at"] = epoch_ms(revision.valid_until)
    if temporal:
        envelope["temporal"] = temporal
    embedded = revision.embedding_state == EmbeddingState.DONE and revision.embedding_model
    envelope["embeddingRef"] = f"{revision.embedding_model}#{revision.id}" if embedded else None
    return envelope, body


def memory_file_of(revision: Revision, links: Iterable[Link], *, seq: int) -> str:
    """One revision of a fact as its memory file's text (named `file_name(fact id)`)."""
    envelope, body = envelope_of(revision, links, seq=seq)
    return serialize_memory_file(envelope, body)


def file_name(fact_id: uuid.UUID | str) -> str:
    return f"{FOLDER}/{fact_id}{SUFFIX}"


def outbound_links(
    principal: Principal, readers: Readers, fact_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Link]]:
    """The links out of `fact_ids` to facts the reader may read (one query), by source: an
    export names no fact the credential could not read."""
    links = Link.objects.filter(
        tenant_id=principal.tenant_id,
        source_id__in=fact_ids,
        target_id__in=readable_fact_ids(principal, readers),
    ).order_by("created_at", "id")
    by_source: dict[uuid.UUID, list[Link]] = {}
    for link in links:
        by_source.setdefault(link.source_id, []).append(link)
    return by_source


def archive_of(files: Iterable[tuple[str, str]]) -> bytes:
    """A zip of (name, text) entries."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            # a fixed date: the same facts export to the same bytes
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return buffer.getvalue()


def facts_archive(
    revisions: Sequence[Revision], links: Mapping[uuid.UUID, Sequence[Link]]
) -> bytes:
    """The zip of an export: one `facts/<id>.md` per revision, `seq` in record-time order."""
    ordered = sorted(revisions, key=lambda r: (r.created_at, r.pk))
    return archive_of(
        (file_name(r.fact_id), memory_file_of(r, links.get(r.fact_id, ()), seq=seq))
        for seq, r in enumerate(ordered, start=1)
    )
