"""Subject access exports (GDPR Art. 15), and their part of an erasure.

`access_export_build(request)` gathers everything kindmem holds about one person and renders it
twice: one JSON document (the schema below) and a zip of Markdown memory files.

JSON schema (``"schema": "kindmem.subject-access-export/1"``); times are ISO 8601 UTC strings,
ids are strings, absent values are ``null``::

    {
      "schema": "kindmem.subject-access-export/1",
      "generated_at": time,
      "tenant_id": id,
      "subject": {"kind": "participant" | "user" | "external", "id": str},
      "facts": [                               # facts whose scope names the person or whose
        {                                      # revisions list them as a subject
          "id", "type", "key", "tags": [str], "created_at",
          "scope": {"org_id"?, "project_id"?, "user_id"?, "participant_id"?,
                    "thread_id"?, "session_id"?},
          "revisions": [                       # every revision, oldest first
            {"id", "version", "content": any JSON, "content_hash",
             "trust": "verified" | "asserted" | "unverified", "verified_by", "verified_at",
             "provenance": {"attributed_kind", "attributed_id", "attributed_agent_version",
                            "generated_by_run_id", "generated_by_step_id",
                            "generated_by_tool_call_id", "source", "caused_by_log_id": [id],
                            "supersedes_revision_id"},
             "validity": {"valid_from", "valid_until", "observed_at"},
             "record": {"created_at", "invalidated_at", "invalidated_by",
                        "invalidation_reason", "review"},
             "retention": {"keep_days", "keep_until", "legal_hold", "expires_at"},
             "subjects": [{"kind", "id"}]}
          ]
        }
      ],
      "links": [{"id", "source_fact_id", "target_fact_id", "type", "confidence",
                 "provenance", "valid_at", "invalid_at", "created_by", "created_at"}],
      "conversations": [{"conversation_id": thread id, "agent_id", "project_id",
                         "segments": [str], "created_at",
                         "messages": [{"sequence", "role", "text", "data", "created_at"}]}],
      "runs": [{"id", "agent_id", "agent_version", "project_id", "thread_id", "session_id",
                "created_at",
                "log": [{"sequence", "kind", "payload" (null once erased),
                         "payload_erased_at", "created_at", "entry_hash"}]}],
      "approvals": [{"id", "fact_id", "revision_id", "status", "reasons": [str],
                     "findings", "agent_id", "agent_version", "run_id", "created_at",
                     "decided_at", "decided_by", "note", "verified_revision_id"}],
      "accesses": [{"timestamp", "phase", "outcome", "kind", "endpoint", "principal",
                    "principal_kind", "agent_id", "run_id",
                    "object_ids": [id]}]   # only ids of rows in this export
    }

Every list holds only rows about the person: the facts about them, the links touching those
facts, their conversations, their runs, the approvals of their facts and the audit events
that name them. The zip holds one ``facts/<fact id>.md`` per fact in the 003 seed's memory-file
format (facts/memory_files.py: ``---\\n<yaml>\\n---\\n<body>``, the frontmatter exactly the
seed's IMemoryEnvelope, kindmem's fields under ``provenance.kindmem``), showing the fact's current
revision (else its last; `shown_revision`), plus ``export.json`` (the document above, with every
revision) and ``README.md`` (every revision, for a person to read).

`erase_batch` deletes the access requests made for the person (their exports hold the person's
data) when the person is erased.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from approvals.models import Approval
from audit.models import AuditEvent
from facts.erasure import facts_about
from facts.memory_exports import archive_of, file_name, memory_file_of
from facts.models import Link, Revision
from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from kindmem.models import Run, SubjectKind
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from recall.erasure import conversations_of
from recall.models import message_ref as message_ref_of
from runlog.models import LogEntry
from webhooks.models import EventKind
from webhooks.outbox import About, outbox_record

SCHEMA = "kindmem.subject-access-export/1"


def _t(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def _revision(revision: Revision) -> dict[str, Any]:
    return {
        "id": str(revision.id),
        "version": revision.version,
        "content": revision.content,
        "content_hash": revision.content_hash,
        "trust": revision.trust,
        "verified_by": revision.verified_by,
        "verified_at": _t(revision.verified_at),
        "provenance": {
            "attributed_kind": revision.attributed_kind,
            "attributed_id": revision.attributed_id,
            "attributed_agent_version": revision.attributed_agent_version,
            "generated_by_run_id": _s(revision.generated_by_run_id),
            "generated_by_step_id": revision.generated_by_step_id,
            "generated_by_tool_call_id": revision.generated_by_tool_call_id,
            "source": revision.source,
            "caused_by_log_id": list(revision.caused_by_log_id),
            "supersedes_revision_id": _s(revision.supersedes_id),
        },
        "validity": {
            "valid_from": _t(revision.valid_from),
            "valid_until": _t(revision.valid_until),
            "observed_at": _t(revision.observed_at),
        },
        "record": {
            "created_at": _t(revision.created_at),
            "invalidated_at": _t(revision.invalidated_at),
            "invalidated_by": revision.invalidated_by,
            "invalidation_reason": revision.invalidation_reason,
            "review": _review_state(revision),
        },
        "retention": {
            "keep_days": revision.keep_days,
            "keep_until": _t(revision.keep_until),
            "legal_hold": revision.legal_hold,
            "expires_at": _t(revision.expires_at),
        },
        "subjects": [
            {"kind": s.kind, "id": s.subject_id}
            for s in sorted(revision.subjects.all(), key=lambda s: (s.kind, s.subject_id))
        ],
    }


def _review_state(revision: Revision) -> str | None:
    """How review ended for the revision: its approval's status (pending, approved, verified,
    rejected, superseded) when it waited for one, else its own flag (None: never reviewed)."""
    try:
        return revision.approval.status
    except Approval.DoesNotExist:
        return revision.review


def _facts(target: ErasureTarget) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    facts = list(
        facts_about(target)
        .order_by("created_at", "id")
        .prefetch_related(
            models.Prefetch(
                "revisions",
                queryset=Revision.objects.order_by("version")
                .select_related("approval")
                .prefetch_related("subjects"),
            )
        )
    )
    fact_ids = [f.id for f in facts]
    links = Link.objects.filter(tenant_id=target.tenant_id).filter(
        models.Q(source_id__in=fact_ids) | models.Q(target_id__in=fact_ids)
    )
    fact_docs = [
        {
            "id": str(f.id),
            "type": f.type,
            "key": f.key,
            "tags": list(f.tags),
            "created_at": _t(f.created_at),
            "scope": f.scope,
            "revisions": [_revision(r) for r in f.revisions.all()],
        }
        for f in facts
    ]
    link_docs = [
        {
            "id": str(link.id),
            "source_fact_id": str(link.source_id),
            "target_fact_id": str(link.target_id),
            "type": link.type,
            "confidence": link.confidence,
            "provenance": link.provenance,
            "valid_at": _t(link.valid_at),
            "invalid_at": _t(link.invalid_at),
            "created_by": link.created_by,
            "created_at": _t(link.created_at),
        }
        for link in links.order_by("created_at", "id")
    ]
    return fact_docs, link_docs


def _conversations(target: ErasureTarget) -> list[dict[str, Any]]:
    conversations = (
        conversations_of(target)
        .select_related("agent")
        .prefetch_related("messages")
        .order_by("created_at", "id")
    )
    return [
        {
            "conversation_id": c.thread_id,
            "agent_id": c.agent.agent_id,
            "project_id": _s(c.project_id),
            "segments": list(c.segments),
            "created_at": _t(c.created_at),
            "messages": [
                {
                    "sequence": m.sequence,
                    "role": m.role,
                    "text": m.text,
                    "data": m.data,
                    "created_at": _t(m.created_at),
                }
                for m in sorted(c.messages.all(), key=lambda m: m.sequence)
            ],
        }
        for c in conversations
    ]


def _runs(target: ErasureTarget) -> list[dict[str, Any]]:
    runs = (
        Run.objects.filter(tenant_id=target.tenant_id)
        .about(target.subject)
        .select_related("agent")
        .prefetch_related(
            models.Prefetch("log_entries", queryset=LogEntry.objects.order_by("sequence"))
        )
        .order_by("created_at", "id")
    )
    return [
        {
            "id": str(run.id),
            "agent_id": run.agent.agent_id,
            "agent_version": run.agent_version,
            "project_id": str(run.project_id),
            "thread_id": run.thread_id,
            "session_id": run.session_id,
            "created_at": _t(run.created_at),
            "log": [
                {
                    "sequence": e.sequence,
                    "kind": e.kind,
                    "payload": e.payload,
                    "payload_erased_at": _t(e.payload_erased_at),
                    "created_at": _t(e.created_at),
                    "entry_hash": e.entry_hash,
                }
                for e in run.log_entries.all()
            ],
        }
        for run in runs
    ]


def _approvals(target: ErasureTarget) -> list[dict[str, Any]]:
    """The approvals of the person's facts (each remembered revision that waited for review),
    with their decision."""
    approvals = (
        Approval.objects.of_tenant(target.tenant_id)
        .filter(revision__fact__in=facts_about(target))
        .select_related("revision", "agent")
        .order_by("created_at", "pk")
    )
    return [
        {
            "id": str(a.pk),
            "fact_id": str(a.revision.fact_id),
            "revision_id": str(a.revision_id),
            "status": a.status,
            "reasons": list(a.reasons),
            "findings": a.findings,
            "agent_id": a.agent.agent_id if a.agent else None,
            "agent_version": a.agent_version,
            "run_id": _s(a.run_id),
            "created_at": _t(a.created_at),
            "decided_at": _t(a.decided_at),
            "decided_by": a.decided_by or None,
            "note": a.note or None,
            "verified_revision_id": _s(a.verified_revision_id),
        }
        for a in approvals
    ]


def _own_ids(document: dict[str, Any]) -> set[str]:
    """The ids of the rows in the export: an audit event lists only these of what it touched
    (one search may have returned other people's facts beside the person's)."""
    ids = {f["id"] for f in document["facts"]}
    ids |= {r["id"] for f in document["facts"] for r in f["revisions"]}
    ids |= {link["id"] for link in document["links"]}
    ids |= {r["id"] for r in document["runs"]}
    ids |= {
        message_ref_of(c["conversation_id"], m["sequence"])
        for c in document["conversations"]
        for m in c["messages"]
    }
    return ids


def _accesses(target: ErasureTarget, own_ids: set[str]) -> list[dict[str, Any]]:
    events = (
        AuditEvent.objects.of_tenant(target.tenant_id)
        .about_subject(str(target.subject))
        .order_by("seq")
    )
    return [
        {
            "timestamp": _t(e.timestamp),
            "phase": e.phase,
            "outcome": e.outcome,
            "kind": e.kind,
            "endpoint": e.endpoint,
            "principal": e.principal,
            "principal_kind": e.principal_kind,
            "agent_id": e.agent_id,
            "run_id": _s(e.run_id),
            "object_ids": [i for i in e.object_ids if i in own_ids],
        }
        for e in events
    ]


def access_export_document(target: ErasureTarget) -> dict[str, Any]:
    facts, links = _facts(target)
    document = {
        "schema": SCHEMA,
        "generated_at": timezone.now().isoformat(),
        "tenant_id": str(target.tenant_id),
        "subject": {"kind": target.kind, "id": target.id},
        "facts": facts,
        "links": links,
        "conversations": _conversations(target),
        "runs": _runs(target),
        "approvals": _approvals(target),
    }
    document["accesses"] = _accesses(target, _own_ids(document))
    return document


def shown_revision(revisions: Sequence[Revision]) -> Revision:
    """The revision a fact's memory file shows: its current one (approved and not invalidated;
    a revision pending review or rejected is never current), else the last that was (a deleted
    or expired fact's last value), else the last written (a fact that never got past review).
    `revisions` oldest first; the history is export.json's."""
    current = [r for r in revisions if r.invalidated_at is None and r.review is None]
    approved = [r for r in revisions if r.review is None]
    return (current or approved or list(revisions))[-1]


def memory_files_of(target: ErasureTarget) -> list[tuple[str, str]]:
    """Each fact about the person as a memory file (facts/memory_files.py), with its links out
    (the links export.json lists from it), in one query each for facts, revisions, subjects and
    links."""
    facts = list(
        facts_about(target)
        .order_by("created_at", "id")
        .prefetch_related(
            models.Prefetch(
                "revisions",
                queryset=Revision.objects.shown().order_by("version").prefetch_related("subjects"),
            )
        )
    )
    links: dict[uuid.UUID, list[Link]] = {}
    for link in Link.objects.filter(
        tenant_id=target.tenant_id, source_id__in=[f.id for f in facts]
    ).order_by("created_at", "id"):
        links.setdefault(link.source_id, []).append(link)
    return [
        (
            file_name(fact.id),
            memory_file_of(
                shown_revision(list(fact.revisions.all())), links.get(fact.id, ()), seq=seq
            ),
        )
        for seq, fact in enumerate(facts, start=1)
    ]


def _history(document: dict[str, Any]) -> str:
    """Every revision of every fact, for a person to read (the memory files show one each)."""
    lines = []
    for fact in document["facts"]:
        lines += ["", f"## {fact['type']} `{fact['id']}`", ""]
        for revision in fact["revisions"]:
            ended = (
                revision["record"]["invalidation_reason"]
                or revision["record"]["review"]
                or "current"
            )
            lines.append(
                f"- v{revision['version']} ({revision['record']['created_at']}, "
                f"{revision['trust']}, {ended}): "
                + json.dumps(revision["content"], ensure_ascii=False)
            )
    return "\n".join(lines)


def access_export_zip(document: dict[str, Any], files: Sequence[tuple[str, str]]) -> bytes:
    readme = (
        "# Subject access export\n\n"
        f"Subject: {document['subject']['kind']} `{document['subject']['id']}`, "
        f"generated {document['generated_at']}.\n\n"
        "- `facts/<id>.md`: one memory file per fact, in the format of `@fgv/ts-agent-memory`"
        " (YAML frontmatter between `---` lines, then the content of its current revision, or"
        " of its last one if it has ended).\n"
        "- `export.json`: everything, machine-readable (schema "
        f"`{document['schema']}`, documented in kindmem's privacy/exports.py), every revision"
        " of every fact included.\n\n"
        "# Every revision of every fact\n" + _history(document) + "\n"
    )
    return archive_of(
        [
            *files,
            ("export.json", json.dumps(document, indent=2, ensure_ascii=False)),
            ("README.md", readme),
        ]
    )


def _requests_for(target: ErasureTarget) -> models.QuerySet[AccessRequest]:
    return AccessRequest.objects.filter(
        tenant_id=target.tenant_id, subject_kind=target.kind, subject_id=target.id
    )


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    ids = list(_requests_for(target).order_by("id").values_list("id", flat=True)[:limit])
    AccessRequest.objects.filter(pk__in=ids).delete()
    if target.kind == SubjectKind.USER and len(ids) < limit:
        # Requests a privacy officer made are not about them, but name them ("staff:<id>").
        for model in (AccessRequest, ErasureRequest):
            model.objects.filter(
                tenant_id=target.tenant_id, requested_by__contains=target.id
            ).update(requested_by="erased")
    return BatchResult(erased=[f"access-request:{i}" for i in ids], done=len(ids) < limit)


def preview(target: ErasureTarget) -> StepPreview:
    return StepPreview(counts={"access-request": _requests_for(target).count()})


def access_export_build(*, access_request_id: uuid.UUID) -> AccessRequest | None:
    """Build the export of one access request (the task calls it). Safe to run twice: a
    finished request is left as it is; a failed one can be built again."""
    claimed = AccessRequest.objects.filter(
        pk=access_request_id,
        status__in=[RequestStatus.PENDING, RequestStatus.RUNNING, RequestStatus.FAILED],
    ).update(status=RequestStatus.RUNNING)
    if claimed != 1:
        return None
    request = AccessRequest.objects.get(pk=access_request_id)
    target = ErasureTarget(request.tenant_id, request.subject_kind, request.subject_id)
    document, files = _in_one_snapshot(
        lambda: (access_export_document(target), memory_files_of(target))
    )
    with transaction.atomic():  # the export is ready, and said to be, together
        finished = AccessRequest.objects.filter(pk=request.pk, status=RequestStatus.RUNNING).update(
            export_json=document,
            export_zip=access_export_zip(document, files),
            status=RequestStatus.COMPLETED,
            finished_at=timezone.now(),
            error="",
        )
        if finished:
            outbox_record(
                tenant_id=request.tenant_id,
                kind=EventKind.ACCESS_EXPORT_READY,
                ordering_key=f"access_request:{request.pk}",
                data={"access_request_id": str(request.pk), "subject_kind": target.kind},
                about=lambda: About(personal={"subject_id": target.id}, subjects=[target.subject]),
            )
    request.refresh_from_db()
    return request


def _in_one_snapshot(build: Any) -> Any:
    """Run `build` in one REPEATABLE READ snapshot, so the export's parts agree with each
    other. Inside a transaction already (a test's), its snapshot is used as it is."""
    if connection.in_atomic_block:
        return build()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return build()
