"""The audit stream: one event per API call that read, wrote, deleted or retrieved memory.

The shape follows the 003 seed's `IMemoryObservationRecord` (`seq`, `timestamp`, `phase`,
`outcome`, `error`, `kind`, scope, provenance, `querySnapshot`), plus who asked and whom the
touched rows are about, so "who read facts about this person" is one indexed query.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.models import Tenant


class Phase(models.TextChoices):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    RETRIEVE = "retrieve"


class Outcome(models.TextChoices):
    SUCCESS = "success"
    FAILURE = "failure"


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def of_tenant(self, tenant_id: object) -> AuditEventQuerySet:
        return self.filter(tenant_id=tenant_id)

    def about_subject(self, subject: str) -> AuditEventQuerySet:
        """Events whose touched rows are about `subject` ("participant:p-1"): the GIN index."""
        return self.filter(subjects__contains=[subject])

    def touching(self, object_id: str) -> AuditEventQuerySet:
        return self.filter(object_ids__contains=[object_id])


class AuditEvent(models.Model):
    # `seq` is the cursor. Events of one tenant get their seq under a per-tenant transaction
    # lock held until commit (see audit.services), so seq order is commit order and a reader
    # paging by `since_seq` never skips an event that commits late.
    seq = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_events")
    timestamp = models.DateTimeField(default=timezone.now)
    phase = models.CharField(max_length=10, choices=Phase.choices)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    error_code = models.CharField(max_length=50, blank=True)
    kind = models.CharField(max_length=20, help_text="What was touched: fact, message, log.")
    endpoint = models.CharField(max_length=100, help_text="METHOD route-name")
    principal = models.CharField(max_length=100)
    principal_kind = models.CharField(max_length=10)
    run_id = models.UUIDField(null=True, blank=True)
    agent_id = models.CharField(max_length=100, blank=True)
    object_ids = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    subjects = ArrayField(models.CharField(max_length=250), default=list, blank=True)
    project_id = models.UUIDField(null=True, blank=True)
    query_snapshot = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        indexes = [
            # GET /v1/audit pages a tenant's events by seq
            models.Index(fields=["tenant", "seq"], name="audit_tenant_seq"),
            # "who read facts about this person, and when"
            GinIndex(fields=["subjects"], name="audit_subjects"),
            # the fact_id filter
            GinIndex(fields=["object_ids"], name="audit_object_ids"),
            # the retention purge
            models.Index(fields=["tenant", "timestamp"], name="audit_tenant_time"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(phase__in=Phase.values), name="audit_phase_valid"),
            models.CheckConstraint(
                condition=Q(outcome__in=Outcome.values), name="audit_outcome_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.phase} {self.outcome}"


class AuditPolicy(models.Model):
    """A tenant's audit settings (absent: the defaults)."""

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, primary_key=True, related_name="audit_policy"
    )
    retention_days = models.PositiveIntegerField(default=365)
    record_query_text = models.BooleanField(
        default=False, help_text="Keep the text of search queries in audit events."
    )

    class Meta:
        verbose_name_plural = "audit policies"

    def __str__(self) -> str:
        return f"audit policy of {self.tenant}"
