"""Webhooks: the endpoints a tenant admin registers, the outbox of events written in the same
transaction as the change each announces, and each endpoint's deliveries and their attempts.

An event is fanned out to the endpoints subscribed to its kind when it is written (one
`Delivery` row each), so what the worker sends is decided at commit time: an endpoint
registered later hears of later changes only, and a rolled-back write leaves neither event nor
delivery. Deliveries of one endpoint that share an ordering key (a fact's) are sent in the
order their events were written: the claim (webhooks/delivery.py) refuses one while an earlier
one of its chain is still pending.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.models import Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOwned


class EventKind(models.TextChoices):
    APPROVAL_PENDING = "approval.pending"
    APPROVAL_DECIDED = "approval.decided"
    ERASURE_COMPLETED = "erasure.completed"
    ACCESS_EXPORT_READY = "access_export.ready"
    EXTRACTION_APPLIED = "extraction.applied"
    FACT_CHANGED = "fact.changed"


class Endpoint(TenantOwned):
    """A receiver of a tenant's events. `secret` signs every delivery (Standard Webhooks,
    "whsec_" + base64); it is shown once, when the endpoint is registered. `include_content`
    is the tenant admin's opt-in to memory content and people's ids in payloads: without it a
    payload carries ids and kinds only."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    events = ArrayField(models.CharField(max_length=40, choices=EventKind.choices))
    secret = models.CharField(max_length=100, editable=False)
    enabled = models.BooleanField(default=True)
    include_content = models.BooleanField(default=False)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=200, blank=True)
    # Deleting an endpoint keeps its row (and its deliveries' history) with the secret
    # cleared: a write fanning out at that moment never references a row that is gone.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # the fan-out's lookup on an announced write: this tenant's live endpoints
            models.Index(
                fields=["tenant"],
                name="webhook_endpoint_live",
                condition=Q(enabled=True, deleted_at__isnull=True),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(events__contained_by=EventKind.values) & ~Q(events=[]),
                name="webhook_endpoint_events_known",
            ),
        ]

    def __str__(self) -> str:
        return self.url


class OutboxEvent(TenantOwned):
    """One change announced, written in the change's transaction. `data` is what every
    subscriber gets (ids and kinds); `personal` what an opted-in endpoint gets besides (memory
    content, people's ids); `subjects` the people it is about ("participant:p-1"), for the
    erasure step that clears their payloads (webhooks/erasure.py)."""

    # the webhook-id receivers deduplicate on; a UUID made here, so that the event and its
    # deliveries are inserted in one round trip (a chain's order is its deliveries' ids)
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40, choices=EventKind.choices)
    ordering_key = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    personal = models.JSONField(default=dict, blank=True)
    subjects = ArrayField(models.CharField(max_length=250), default=list, blank=True)
    erased = models.BooleanField(default=False)  # an erasure cleared what named the person
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "created_at"], name="webhook_event_time"),
            # the erasure step's lookup (webhooks/erasure.py), as the audit stream's subjects
            GinIndex(fields=["subjects"], name="webhook_event_subjects"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # to send, or sending (leased), or waiting for its retry
    DELIVERED = "delivered"
    FAILED = "failed"  # every attempt failed; the chain behind it goes on


class Delivery(TenantOwned):
    """One event to one endpoint: its state, the claim a worker holds on it while it sends
    (`lease`, until `leased_until`), and when it is next due."""

    # insertion order: an endpoint's deliveries of one chain are written in their events'
    # order (a fact's writers queue on its row lock), so the id is the chain's order
    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    endpoint = TenantForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = TenantForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="deliveries")
    ordering_key = models.CharField(max_length=100)  # the event's, so the claim reads one table
    status = models.CharField(
        max_length=20, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    lease = models.UUIDField(null=True, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            # the claim's order check: an earlier pending delivery of the same chain
            models.Index(
                fields=["tenant", "endpoint", "ordering_key", "id"],
                name="webhook_delivery_chain",
                condition=Q(status="pending"),
            ),
            # the sweep: pending deliveries by when they are due
            models.Index(
                fields=["tenant", "next_attempt_at"],
                name="webhook_delivery_due",
                condition=Q(status="pending"),
            ),
            # the console's page of an endpoint: its newest deliveries
            models.Index(fields=["tenant", "endpoint", "-id"], name="webhook_delivery_recent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "endpoint", "event"], name="webhook_delivery_once"
            ),
            models.CheckConstraint(
                condition=Q(status__in=DeliveryStatus.values), name="webhook_delivery_status"
            ),
        ]

    def __str__(self) -> str:
        return f"delivery {self.pk}"


class DeliveryAttempt(TenantOwned):
    """One POST of a delivery: when, how long, what the receiver answered (status only: a
    receiver's body is not kept), or why it failed."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    delivery = TenantForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "delivery", "number"], name="webhook_attempt_once"
            )
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
