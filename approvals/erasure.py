"""The approvals' erasure step: the review records about a person (they copy words of the
memory in their matched spans and may name the person in a reviewer's note)."""

from __future__ import annotations

import uuid

from django.db.models import Q

from approvals.models import Approval
from kindmem.models import SubjectKind
from privacy.erasure import BatchResult, ErasureTarget


def _about(target: ErasureTarget) -> Q:
    if target.kind == SubjectKind.CONVERSATION:
        return Q(revision__fact__thread_id=target.id) | Q(run__thread_id=target.id)
    about = Q(revision__subjects__kind=target.kind, revision__subjects__subject_id=target.id)
    if target.kind == SubjectKind.PARTICIPANT:
        about |= Q(revision__fact__participant_id=target.id) | Q(run__participant_id=target.id)
    elif target.kind == SubjectKind.USER and _is_uuid(target.id):
        # a user id that is not a UUID names no Kindgi user: only the subjects can match it
        about |= Q(revision__fact__user_id=target.id) | Q(run__user_id=target.id)
    return about


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    """Delete up to `limit` approvals about the target, in primary-key order; done when none
    are left. The facts' own step erases the revisions they point to."""
    matching = (
        Approval.objects.filter(tenant_id=target.tenant_id).filter(_about(target)).values("pk")
    )
    ids = list(
        Approval.objects.filter(pk__in=matching).order_by("pk").values_list("pk", flat=True)[:limit]
    )
    Approval.objects.filter(pk__in=ids).delete()
    return BatchResult(erased=[f"approval:{pk}" for pk in ids], done=len(ids) < limit)
