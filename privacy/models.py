"""Erasure requests (GDPR Art. 17) and subject access requests (Art. 15)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.models import SubjectKind, Tenant
from kindmem.subjects import Subject
from kindmem.tenant_keys import TenantOwned
from privacy.receipts import subject_references


class RequestStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


# A request a worker has yet to finish: pending, or running (perhaps on a worker that died).
UNFINISHED = (RequestStatus.PENDING, RequestStatus.RUNNING)


class RequestQuerySet(models.QuerySet):
    def unfinished(self) -> RequestQuerySet:
        return self.filter(status__in=UNFINISHED)

    def finished(self) -> RequestQuerySet:
        return self.exclude(status__in=UNFINISHED)


class ErasureRequestQuerySet(RequestQuerySet):
    def of_subject(self, tenant_id: uuid.UUID, subject: Subject) -> ErasureRequestQuerySet:
        """The tenant's erasures of `subject`, finished ones included (they have forgotten its
        id and are found by their target reference, `privacy/receipts.py`)."""
        return self.filter(
            tenant_id=tenant_id,
            target_kind=subject.kind.value,
            target_reference__in=subject_references(tenant_id=tenant_id, subject=subject),
        )


class ErasureRequest(TenantOwned):
    """One erasure: its target, its progress (per step, committed with each batch, so a worker
    that dies resumes where the last batch ended) and, once done, its receipt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="erasures")
    target_kind = models.CharField(max_length=20, choices=SubjectKind.choices)
    # Cleared when the erasure completes: the receipt keeps no personal data.
    target_id = models.CharField(max_length=200, blank=True)
    # Kept for good: a keyed hash of the target (privacy/receipts.py), so "was this id
    # erased?" has an answer without the id. Blank on erasures from before it existed.
    target_reference = models.CharField(max_length=64, blank=True)
    reason = models.TextField()
    requested_by = models.CharField(max_length=200)
    status = models.CharField(
        max_length=10, choices=RequestStatus.choices, default=RequestStatus.PENDING
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # {"steps": {name: {"done": bool, "count": int}}, "digest": hex, "held": [...]}
    progress = models.JSONField(default=dict, blank=True)
    total_estimate = models.PositiveIntegerField(default=0)
    receipt = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    objects = ErasureRequestQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RequestStatus.values), name="erasure_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(target_kind__in=SubjectKind.values), name="erasure_target_kind_valid"
            ),
        ]
        indexes = [
            # the resume sweep finds unfinished erasures
            models.Index(
                fields=["status", "heartbeat_at"],
                name="erasure_unfinished",
                condition=Q(status__in=["pending", "running"]),
            ),
            # ErasureRequest.objects.of_subject: "was this id erased?"
            models.Index(fields=["tenant", "target_reference"], name="erasure_by_reference"),
        ]

    def __str__(self) -> str:
        return f"erasure {self.id} ({self.status})"

    @property
    def done_count(self) -> int:
        steps = (self.progress or {}).get("steps", {})
        return sum(step.get("count", 0) for step in steps.values())

    @property
    def progress_summary(self) -> dict[str, int]:
        """Records done / total for the progress bar (the total is estimated when the
        erasure starts; a finished erasure's total is what it did)."""
        done = self.done_count
        if self.status == RequestStatus.COMPLETED:
            return {"done": done, "total": done}
        return {"done": done, "total": max(done, self.total_estimate)}


class AccessRequest(TenantOwned):
    """A subject access request and the export built for it (erased with the person)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="access_requests")
    subject_kind = models.CharField(max_length=20, choices=SubjectKind.choices)
    subject_id = models.CharField(max_length=200)
    requested_by = models.CharField(max_length=200)
    status = models.CharField(
        max_length=10, choices=RequestStatus.choices, default=RequestStatus.PENDING
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    export_json = models.JSONField(null=True, blank=True)
    export_zip = models.BinaryField(null=True, blank=True)
    error = models.TextField(blank=True)

    objects = RequestQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "subject_kind", "subject_id"], name="access_by_subject")
        ]

    def __str__(self) -> str:
        return f"access request {self.id} ({self.status})"
