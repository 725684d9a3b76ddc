"""The webhooks' erasure step: the events about a person keep their ids and kinds, and lose
what named them (memory content, people's ids: `personal`, and `subjects`). A delivery still
queued then sends the event without them, marked `erased`; nothing already stored names the
person. (What a receiver already received is the receiver's to erase: it was told with the
`erasure.completed` event.)"""

from __future__ import annotations

from django.db.models import QuerySet

from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from webhooks.models import OutboxEvent


def _about(target: ErasureTarget) -> QuerySet[OutboxEvent]:
    return OutboxEvent.objects.filter(tenant_id=target.tenant_id, subjects__contains=[str(target)])


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    """Clear up to `limit` events about the target, in primary-key order."""
    ids = list(_about(target).order_by("pk").values_list("pk", flat=True)[:limit])
    OutboxEvent.objects.filter(pk__in=ids).update(personal={}, subjects=[], erased=True)
    return BatchResult(erased=[f"webhook-event:{pk}" for pk in ids], done=len(ids) < limit)


def preview(target: ErasureTarget) -> StepPreview:
    found = _about(target).count()
    # a kind with nothing to erase is left out: most tenants have no webhooks
    return StepPreview(counts={"webhook-event": found} if found else {})
