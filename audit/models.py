"""The audit stream: one event per API call that read, wrote, deleted or retrieved memory.

The shape follows the 003 seed's `IMemoryObservationRecord` (`seq`, `timestamp`, `phase`,
`outcome`, `error`, `kind`, scope, provenance, `querySnapshot`), plus who asked and whom the
touched rows are about, so "who read facts about this person" is one indexed query.

The seed's `kind` (what kind of memory) and `scope` are a fact's `type` and scope here; one call
may touch facts of several, so an event keeps each distinct pair it touched as a target
(`{"type": ..., "scope": {...}}`). The event's own `kind` is what kind of row it touched (fact,
message, log).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.models import Tenant
from kindmem.tenant_keys import TenantOwned

MAX_ERROR = 500


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

    def of_project(self, project_id: object) -> AuditEventQuerySet:
        """Events of a project: the event's own (any kind of event has one), or one of the
        facts it touched (a list across projects names the first in its column)."""
        return self.filter(
            Q(project_id=project_id)
            | Q(targets__contains=[{"scope": {"project_id": str(project_id)}}])
        )

    def targeting(
        self, *, type: str | None = None, scope: Mapping[str, object] | None = None
    ) -> AuditEventQuerySet:
        """Events that touched a fact of `type` (if given) whose scope has every given key equal
        (as `GET /v1/facts` narrows by scope), both in one target: JSON containment, which the
        GIN index serves."""
        wanted: dict[str, object] = {}
        if type is not None:
            wanted["type"] = type
        if scope:
            wanted["scope"] = {k: str(v) for k, v in scope.items()}
        return self.filter(targets__contains=[wanted]) if wanted else self


class AuditEvent(TenantOwned):
    # `seq` is the cursor. Events of one tenant get their seq under a per-tenant transaction
    # lock held until commit (see audit.services), so seq order is commit order and a reader
    # paging by `since_seq` never skips an event that commits late.
    seq = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_events")
    timestamp = models.DateTimeField(default=timezone.now)
    phase = models.CharField(max_length=10, choices=Phase.choices)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    error_code = models.CharField(max_length=50, blank=True)
    error = models.CharField(
        max_length=MAX_ERROR, blank=True, help_text="A failure's message, as the caller was told."
    )
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
    # [{"type": "preference", "scope": {"project_id": ..., "participant_id": ...}}, ...]: the
    # distinct fact types and scopes the call touched, or, when it touched none (a refused
    # write, an empty search), the one it asked for. Filled wherever facts are touched (the
    # facts routes, remember and review, a cap-cull eviction); [] for messages and logs.
    targets = models.JSONField(default=list, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        indexes = [
            # GET /v1/audit pages a tenant's events by seq
            models.Index(fields=["tenant", "seq"], name="audit_tenant_seq"),
            # "who read facts about this person, and when"
            GinIndex(fields=["subjects"], name="audit_subjects"),
            # the fact_id filter
            GinIndex(fields=["object_ids"], name="audit_object_ids"),
            # the type and scope filters (`targeting`: @> only, so the smaller jsonb_path_ops)
            GinIndex(fields=["targets"], name="audit_targets", opclasses=["jsonb_path_ops"]),
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


class AuditPolicy(TenantOwned):
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
