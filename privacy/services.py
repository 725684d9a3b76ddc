"""Privacy workflows: starting erasures and access requests."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.signing import BadSignature, SignatureExpired, TimestampSigner
from django.db import transaction

from api.background import enqueue_on_commit
from api.errors import LinkExpired, NotFound, ValidationFailed
from audit.models import Outcome, Phase
from audit.services import Actor, AuditNote, audit_record
from kindmem import services as kindmem_services
from kindmem.models import SubjectKind
from kindmem.subjects import Subject
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.receipts import subject_reference
from privacy.tasks import build_access_export, erase_subject


@transaction.atomic
def erasure_start(
    *, tenant_id: uuid.UUID, target_kind: str, target_id: str, reason: str, requested_by: str
) -> ErasureRequest:
    """Accept an erasure: from this commit on, nothing new lands for the target and reads of
    their data return nothing (the hold); a worker then erases everything about them."""
    # Validated before anything is claimed or held: a user is a UUID, no id is empty or
    # holds a NUL. A target the steps could not agree on would never finish.
    subject = Subject.parse(target_kind, target_id)
    target_kind, target_id = subject.kind.value, subject.id
    if not reason.strip():
        raise ValidationFailed("An erasure names its target and gives a reason.")
    unfinished = (
        ErasureRequest.objects.unfinished()
        .filter(tenant_id=tenant_id, target_kind=target_kind, target_id=target_id)
        .order_by("created_at")
        .first()
    )
    if unfinished is not None:
        # Asking again while the person is being erased changes nothing: the same request.
        return unfinished
    request = ErasureRequest.objects.create(
        tenant_id=tenant_id,
        target_kind=target_kind,
        target_id=target_id,
        target_reference=subject_reference(tenant_id=tenant_id, subject=subject),
        reason=reason,
        requested_by=requested_by,
        status=RequestStatus.PENDING,
    )
    kindmem_services.hold_place(
        tenant_id=tenant_id, subject_kind=target_kind, subject_id=target_id, erasure_id=request.id
    )
    # a broker that cannot be reached does not fail the request: resume_erasures queues it
    enqueue_on_commit(erase_subject, str(request.id), tenant_id=str(tenant_id))
    return request


def _audit(actor: Actor, *, subject: str, object_id: uuid.UUID, endpoint: str) -> None:
    note = AuditNote(phase=Phase.READ, kind="access-export")
    note.touch(ids=[object_id], subjects=[subject])
    audit_record(principal=actor, note=note, outcome=Outcome.SUCCESS, endpoint=endpoint)


@transaction.atomic
def person_page_audit(
    *, actor: Actor, subject: str, object_ids: list[Any], endpoint: str = "GET console person"
) -> None:
    """A staff member opened a person's page: a read of everything shown about them (phase
    read, kind "person"), so the person's access export lists staff reads as well."""
    note = AuditNote(phase=Phase.READ, kind="person")
    note.touch(ids=object_ids, subjects=[subject])
    audit_record(principal=actor, note=note, outcome=Outcome.SUCCESS, endpoint=endpoint)


@transaction.atomic
def access_request_start(
    *, actor: Actor, subject_kind: str, subject_id: str, endpoint: str = "POST access-requests"
) -> AccessRequest:
    """Accept a subject access request: a worker builds the export once this commits. The
    request is audited (phase read) as what it is: a read of everything about the person."""
    if subject_kind not in (SubjectKind.PARTICIPANT, SubjectKind.USER, SubjectKind.EXTERNAL):
        raise ValidationFailed(f"An access request names a person, not a {subject_kind!r}.")
    subject = Subject.parse(subject_kind, subject_id)
    subject_kind, subject_id = subject.kind.value, subject.id
    request = AccessRequest.objects.create(
        tenant_id=actor.tenant_id,
        subject_kind=subject_kind,
        subject_id=subject_id,
        requested_by=actor.id,
        status=RequestStatus.PENDING,
    )
    _audit(actor, subject=f"{subject_kind}:{subject_id}", object_id=request.id, endpoint=endpoint)
    # a broker that cannot be reached does not fail the request: resume_access_exports queues it
    enqueue_on_commit(build_access_export, str(request.id), tenant_id=str(actor.tenant_id))
    return request


EXPORT_SALT = "privacy.access-export"


def access_export_token(*, request: AccessRequest) -> str:
    """The signed, expiring capability in a download link (max age:
    ACCESS_EXPORT_LINK_MAX_AGE seconds from now)."""
    return TimestampSigner(salt=EXPORT_SALT).sign(f"{request.tenant_id}:{request.id}")


@dataclass(frozen=True)
class ExportFile:
    """A subject access export as downloaded: its bytes, content type and file name."""

    content: bytes
    content_type: str
    name: str


def access_export_open(
    *, actor: Actor, request_id: uuid.UUID | str, token: str, fmt: str, endpoint: str
) -> ExportFile:
    """The export file of a finished request of the actor's tenant, if `token` is a valid,
    unexpired link for it. The download is audited."""
    try:
        value = TimestampSigner(salt=EXPORT_SALT).unsign(
            token, max_age=settings.ACCESS_EXPORT_LINK_MAX_AGE
        )
    except SignatureExpired:
        raise LinkExpired() from None
    except BadSignature:
        raise NotFound("No such export.") from None
    if value != f"{actor.tenant_id}:{request_id}":
        raise NotFound("No such export.")
    request = AccessRequest.objects.filter(
        tenant_id=actor.tenant_id, pk=request_id, status=RequestStatus.COMPLETED
    ).first()
    if request is None:
        raise NotFound("No such export.")
    with transaction.atomic():
        _audit(
            actor,
            subject=f"{request.subject_kind}:{request.subject_id}",
            object_id=request.id,
            endpoint=endpoint,
        )
    if fmt == "zip":
        return ExportFile(
            content=bytes(request.export_zip or b""),
            content_type="application/zip",
            name=f"access-export-{request.id}.zip",
        )
    return ExportFile(
        content=json.dumps(request.export_json, indent=2, ensure_ascii=False).encode(),
        content_type="application/json",
        name=f"access-export-{request.id}.json",
    )
