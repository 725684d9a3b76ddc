"""Writing an event to the outbox, in the transaction of the change it announces.

The apps whose changes are announced (facts, approvals, extraction, privacy) call
`outbox_record` inside their write's transaction; it sits on a floor below them (webhooks
imports none of them). The event and one delivery per subscribed endpoint are inserted in one
round trip, and each delivery is queued when the transaction commits: a rolled-back write
leaves neither event nor delivery, and a committed one always has its deliveries (the sweep,
`webhooks.tasks.resume_webhooks`, sends what a lost message did not).

A write in a tenant without webhooks pays nothing most of the time: that the tenant has no
live endpoint is remembered by the process for `WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS`, so an
endpoint hears of changes from at most that long after it was registered (the process that
registered it at once).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from api.background import enqueue_on_commit
from compiled import insert
from kindmem.subjects import Subject
from webhooks.models import Delivery, Endpoint, EventKind, OutboxEvent
from webhooks.tasks import deliver_webhook

# tenant id -> monotonic time until which it is known to have no live endpoint
_quiet: dict[str, float] = {}


def subscriptions_changed(tenant_id: uuid.UUID | str) -> None:
    """Forget what this process remembered of the tenant's endpoints (one was registered)."""
    _quiet.pop(str(tenant_id), None)


def _subscribed(tenant_id: uuid.UUID | str, kind: str) -> list[uuid.UUID]:
    key = str(tenant_id)
    if _quiet.get(key, 0.0) > time.monotonic():
        return []
    live = list(
        Endpoint.objects.filter(tenant_id=tenant_id, enabled=True, deleted_at__isnull=True)
        .order_by("created_at")
        .values_list("pk", "events")
    )
    if not live:
        _quiet[key] = time.monotonic() + settings.WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS
    return [pk for pk, events in live if kind in events]


@dataclass(frozen=True)
class About:
    """What an opted-in endpoint gets besides ids and kinds (`personal`: memory content,
    people's ids), and the people the change is about (`subjects`: an erasure clears their
    events' `personal`)."""

    personal: Mapping[str, Any] = field(default_factory=dict)
    subjects: Iterable[Subject | str] = ()


def outbox_record(
    *,
    tenant_id: uuid.UUID | str,
    kind: EventKind,
    ordering_key: str,
    data: Mapping[str, Any],
    about: Callable[[], About] | None = None,
) -> OutboxEvent | None:
    """Announce a change to the tenant's endpoints subscribed to `kind`, in the caller's
    transaction (which it must be in: the event commits or rolls back with the change).

    `data` is what every subscriber gets: ids and kinds, never content or a person's id.
    `about` is called only when some endpoint is subscribed (it may read rows): what the event
    carries about people. `ordering_key` names the chain the event is delivered in order
    within (e.g. "fact:<id>"). None when no endpoint is subscribed: nothing is written."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("outbox_record must run in the transaction of the change it announces")
    endpoints = _subscribed(tenant_id, kind)
    if not endpoints:
        return None
    told = about() if about is not None else About()
    now = timezone.now()
    event = OutboxEvent(
        tenant_id=tenant_id,
        kind=kind,
        ordering_key=ordering_key,
        data=dict(data),
        personal=dict(told.personal),
        subjects=sorted({str(s) for s in told.subjects}),
        created_at=now,
    )
    deliveries = [
        Delivery(
            tenant_id=tenant_id,
            endpoint_id=endpoint_id,
            event=event,
            ordering_key=ordering_key,
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint_id in endpoints
    ]
    insert([event], deliveries)
    for delivery in deliveries:
        enqueue_on_commit(deliver_webhook, delivery.pk, str(tenant_id))
    return event
