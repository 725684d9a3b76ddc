"""Privacy workflows: starting erasures and access requests."""

from __future__ import annotations

import uuid

from django.db import transaction

from kindmem.errors import ValidationFailed
from kindmem.models import ErasureHold, SubjectKind
from privacy.models import ErasureRequest, RequestStatus


@transaction.atomic
def erasure_start(
    *, tenant_id: uuid.UUID, target_kind: str, target_id: str, reason: str, requested_by: str
) -> ErasureRequest:
    """Accept an erasure: from this commit on, nothing new lands for the target and reads of
    their data return nothing (the hold); a worker then erases everything about them."""
    from privacy.tasks import erase_subject

    if target_kind not in SubjectKind.values:
        raise ValidationFailed(f"Unknown target kind {target_kind!r}.")
    if not target_id or not reason.strip():
        raise ValidationFailed("An erasure names its target and gives a reason.")
    request = ErasureRequest.objects.create(
        tenant_id=tenant_id,
        target_kind=target_kind,
        target_id=target_id,
        reason=reason,
        requested_by=requested_by,
        status=RequestStatus.PENDING,
    )
    ErasureHold.objects.create(
        tenant_id=tenant_id, subject_kind=target_kind, subject_id=target_id, erasure_id=request.id
    )
    erase_subject.delay_on_commit(str(request.id))
    return request
