"""The approvals' erasure step: the review records about a person (they copy words of the
memory in their matched spans and may name the person in a reviewer's note)."""

from __future__ import annotations

from django.db.models import Q

from approvals.models import Approval, ApprovalQuerySet
from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from kindmem.models import SubjectKind

ERASED_MARK = "erased"


def _about(target: ErasureTarget) -> ApprovalQuerySet:
    return Approval.objects.of_tenant(target.tenant_id).about(target.subject)


def _decided_by(target: ErasureTarget) -> ApprovalQuerySet:
    # Decisions the user took as a reviewer are not about them, but name them.
    return Approval.objects.of_tenant(target.tenant_id).filter(
        Q(decided_by__contains=target.id) | Q(decided_by_user_id=target.subject.user_uuid)
    )


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    """Delete up to `limit` approvals about the target, in primary-key order; done when none
    are left. The facts' own step erases the revisions they point to."""
    ids = list(
        Approval.objects.filter(pk__in=_about(target).values("pk"))
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    Approval.objects.filter(pk__in=ids).delete()
    erased = [f"approval:{pk}" for pk in ids]
    if len(ids) == limit:
        return BatchResult(erased=erased, done=False)
    if target.kind == SubjectKind.USER:
        decided = _decided_by(target)
        scrubbed = list(decided.order_by("pk").values_list("pk", flat=True)[: limit - len(ids)])
        Approval.objects.filter(pk__in=scrubbed).update(
            decided_by=ERASED_MARK, decided_by_user=None
        )
        erased += [f"reviewer:{pk}" for pk in scrubbed]
        if len(scrubbed) == limit - len(ids):
            return BatchResult(erased=erased, done=False)
    return BatchResult(erased=erased, done=True)


def preview(target: ErasureTarget) -> StepPreview:
    counts = {"approval": _about(target).count()}
    if target.kind == SubjectKind.USER:
        counts["reviewer"] = _decided_by(target).exclude(pk__in=_about(target).values("pk")).count()
    return StepPreview(counts=counts)
