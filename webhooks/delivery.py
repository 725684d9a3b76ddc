"""Sending a delivery: claim it, POST it signed, record the attempt, schedule what comes next.

At least once: a worker claims a delivery with a conditional UPDATE that sets a lease (a token
and an expiry a little past the HTTP timeout) and commits before it sends, and records the
outcome only while its lease is still the delivery's. A worker killed mid-POST leaves the lease
to expire; the delivery is then claimed again (its message redelivered, or the sweep), and the
receiver may see the same `webhook-id` twice, which is what the id is for.

In order per chain: the claim refuses a delivery while an earlier delivery of the same endpoint
and ordering key (a fact's) is pending, so a fact's events arrive in the order they were
written, a retried one holding back those behind it. When one is delivered, or given up after
`WEBHOOK_MAX_ATTEMPTS`, the next of its chain is queued at once.

Backoff: attempt n failed, the next is due after `WEBHOOK_BACKOFF_SECONDS * 2**(n-1)`, at most
`WEBHOOK_BACKOFF_MAX_SECONDS`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, Min, OuterRef, Q
from django.utils import timezone

from webhooks.addresses import UnsafeURL, target_of
from webhooks.models import Delivery, DeliveryAttempt, DeliveryStatus, Endpoint, OutboxEvent
from webhooks.sending import Sent, post, signed_headers


def lease_seconds() -> float:
    """How long a claim holds: the POST's bound (connect, send, answer) and a margin."""
    return 3 * settings.WEBHOOK_TIMEOUT_SECONDS + 5


def backoff(attempts: int) -> float:
    return float(
        min(
            settings.WEBHOOK_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0),
            settings.WEBHOOK_BACKOFF_MAX_SECONDS,
        )
    )


def message_id(event: OutboxEvent) -> str:
    return f"msg_{event.pk.hex}"


def payload_of(event: OutboxEvent, endpoint: Endpoint) -> dict[str, Any]:
    """What the endpoint receives: Standard Webhooks' {type, timestamp, data}; ids and kinds,
    and the personal part only for an endpoint that opted in (none left after an erasure)."""
    data = dict(event.data)
    if endpoint.include_content and event.personal:
        data.update(event.personal)
    if event.erased:
        data["erased"] = True
    return {
        "type": event.kind,
        "timestamp": event.created_at.isoformat().replace("+00:00", "Z"),
        "data": data,
    }


def _earlier_pending() -> Exists:
    return Exists(
        Delivery.objects.filter(
            tenant_id=OuterRef("tenant_id"),
            endpoint_id=OuterRef("endpoint_id"),
            ordering_key=OuterRef("ordering_key"),
            status=DeliveryStatus.PENDING,
            pk__lt=OuterRef("pk"),
        )
    )


def claimable(now: datetime) -> Q:
    """A pending delivery that is due, free (no live lease) and to a live endpoint."""
    return (
        Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        & (Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        & Q(endpoint__enabled=True, endpoint__deleted_at__isnull=True)
    )


@dataclass(frozen=True)
class Outcome:
    status: str  # the delivery's status afterwards, or "" when this call did not send it
    retry_in: float | None = None  # seconds until its next attempt, when it will be retried
    next_in_chain: int | None = None  # the delivery to queue now that this one is settled


def _claim(delivery_id: int) -> uuid.UUID | None:
    now = timezone.now()
    lease = uuid.uuid4()
    claimed = (
        Delivery.objects.filter(claimable(now), pk=delivery_id)
        .exclude(_earlier_pending())
        .update(
            lease=lease,
            leased_until=now + timedelta(seconds=lease_seconds()),
            attempts=F("attempts") + 1,
        )
    )
    return lease if claimed == 1 else None


def delivery_send(*, delivery_id: int) -> Outcome:
    """Send one delivery if it is due and first in its chain (else do nothing: whoever holds
    it, or the delivery before it, will see to it). Runs in autocommit: the claim commits
    before the POST, and no transaction stays open while a receiver answers."""
    lease = _claim(delivery_id)
    if lease is None:
        return Outcome("")
    delivery = Delivery.objects.select_related("endpoint", "event").get(pk=delivery_id)
    endpoint, event = delivery.endpoint, delivery.event
    started = timezone.now()
    body = json.dumps(payload_of(event, endpoint), separators=(",", ":")).encode()
    try:
        target = target_of(endpoint.url)
    except UnsafeURL as exc:
        sent = Sent(None, f"refused: {exc}"[:500], 0)
    else:
        headers = signed_headers(
            secret=endpoint.secret, msg_id=message_id(event), at=started, body=body
        )
        sent = post(target, body, headers, settings.WEBHOOK_TIMEOUT_SECONDS)
    return _record(delivery, lease, started, sent)


@transaction.atomic
def _record(delivery: Delivery, lease: uuid.UUID, started: datetime, sent: Sent) -> Outcome:
    """The attempt and the delivery's new state, only while this worker's lease is the
    delivery's (a worker whose lease ran out and was claimed again records nothing)."""
    now = timezone.now()
    number = delivery.attempts
    if sent.ok:
        fields: dict[str, Any] = {"status": DeliveryStatus.DELIVERED, "delivered_at": now}
        retry_in = None
    elif number >= settings.WEBHOOK_MAX_ATTEMPTS:
        fields, retry_in = {"status": DeliveryStatus.FAILED}, None
    else:
        retry_in = backoff(number)
        fields = {"next_attempt_at": now + timedelta(seconds=retry_in)}
    held = Delivery.objects.filter(pk=delivery.pk, lease=lease).update(
        lease=None, leased_until=None, last_error=sent.error, **fields
    )
    if held != 1:
        return Outcome("")
    DeliveryAttempt.objects.create(
        tenant_id=delivery.tenant_id,
        delivery=delivery,
        number=number,
        started_at=started,
        duration_ms=sent.duration_ms,
        status_code=sent.status_code,
        error=sent.error,
    )
    status = str(fields.get("status", DeliveryStatus.PENDING))
    following = None
    if status != DeliveryStatus.PENDING:
        following = (
            Delivery.objects.filter(
                tenant_id=delivery.tenant_id,
                endpoint_id=delivery.endpoint_id,
                ordering_key=delivery.ordering_key,
                status=DeliveryStatus.PENDING,
                pk__gt=delivery.pk,
            )
            .order_by("pk")
            .values_list("pk", flat=True)
            .first()
        )
    return Outcome(status, retry_in, following)


def deliveries_due(*, limit: int) -> list[tuple[int, float]]:
    """The current tenant's pending deliveries the sweep should queue: each chain's first,
    due now or within the sweep's interval (a lease running out included), oldest first, with
    the seconds until it is due."""
    now = timezone.now()
    horizon = now + timedelta(seconds=settings.WEBHOOK_SWEEP_SECONDS)
    rows = (
        Delivery.objects.filter(
            status=DeliveryStatus.PENDING,
            next_attempt_at__lte=horizon,
            endpoint__enabled=True,
            endpoint__deleted_at__isnull=True,
        )
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=horizon))
        .exclude(_earlier_pending())
        .order_by("next_attempt_at", "pk")
        .values_list("pk", "next_attempt_at", "leased_until")[:limit]
    )
    due = []
    for pk, next_at, leased_until in rows:
        at = max(next_at, leased_until) if leased_until is not None else next_at
        due.append((pk, max((at - now).total_seconds(), 0.0)))
    return due


@dataclass(frozen=True)
class DeliveriesState:
    pending: int
    oldest_pending: datetime | None
    failed_last_day: int


def deliveries_state(*, now: datetime) -> DeliveriesState:
    """The current tenant's deliveries for /metrics: waiting (to live endpoints), the oldest
    waiting one's creation, and those given up in the last day."""
    waiting = Delivery.objects.filter(
        status=DeliveryStatus.PENDING, endpoint__enabled=True, endpoint__deleted_at__isnull=True
    )
    found = waiting.aggregate(n=Count("pk"), oldest=Min("created_at"))
    failed = Delivery.objects.filter(
        status=DeliveryStatus.FAILED, created_at__gte=now - timedelta(days=1)
    ).count()
    return DeliveriesState(found["n"], found["oldest"], failed)
