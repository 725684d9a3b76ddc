"""A tenant's per-type policies for facts (retention, writes) and the sweeps' reports."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from api.content_schema import validate_content_schema
from kindmem.models import Tenant
from kindmem.tenant_keys import TenantOwned


class RetentionPolicy(TenantOwned):
    """A tenant's default retention for one fact type; a fact-level override wins."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    fact_type = models.CharField(max_length=100)
    keep_days = models.PositiveIntegerField(null=True, blank=True)
    legal_hold = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "retention policies"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "fact_type"], name="retention_policy_per_type"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fact_type}: {self.keep_days} days"


class WritePolicyKind(models.TextChoices):
    LAST_WRITE_WINS = "last-write-wins", "last write wins (default): every write is kept"
    CAP_CULL = "cap-cull", "bounded ring: past max_records per scope, the oldest are evicted"


class DedupScope(models.TextChoices):
    """Seed 003's `DedupScope`, and kindmem's default between them (`SLOT`)."""

    SLOT = "slot", "slot (kindmem's default): the same content in the same slot is one fact"
    CONTENT = "content", "content: the same content anywhere in the scope, under any key"
    ENTITY = "entity", "entity: only a keyed slot's same content; keyless writes never collapse"


class WritePolicy(TenantOwned):
    """How writes of one fact type behave in a tenant (the 003 seed's write policies). Types
    without a row are last-write-wins."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    fact_type = models.CharField(max_length=100)
    policy = models.CharField(
        max_length=20, choices=WritePolicyKind.choices, default=WritePolicyKind.LAST_WRITE_WINS
    )
    max_records = models.PositiveIntegerField(null=True, blank=True)
    # Empty: `slot` for last-write-wins, `entity` for a bounded ring (its turns never collapse).
    dedup_scope = models.CharField(max_length=10, choices=DedupScope.choices, blank=True)
    # Seed 003's `mutableFields`: the content fields a write after the first may change (any
    # write: patch, supersede, re-post, remember, proposal; `facts.authority`). Empty (the
    # default, and a type without a row): every field; otherwise a write changing another is
    # refused, naming it.
    mutable_fields = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Content fields a later write (patch, supersede, remember) may change;"
        " empty: every field.",
    )
    content_schema = models.JSONField(
        null=True,
        blank=True,
        validators=[validate_content_schema],
        help_text="A JSON Schema (Draft 2020-12) every write of this type's content must fit.",
    )

    class Meta:
        verbose_name_plural = "write policies"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "fact_type"], name="write_policy_per_type"),
            models.CheckConstraint(
                condition=Q(policy__in=WritePolicyKind.values), name="write_policy_kind_valid"
            ),
            models.CheckConstraint(
                condition=~Q(policy=WritePolicyKind.CAP_CULL) | Q(max_records__gte=1),
                name="cap_cull_names_its_cap",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fact_type}: {self.policy}"


class SweepKind(models.TextChoices):
    EXPIRY = "expiry", "expiry sweep: current revisions past expires_at invalidated"
    PURGE = "purge", "purge: ended facts' invalidated revisions deleted after the delay"


class SweepReport(TenantOwned):
    """What one run of the expiry sweep or the purge did in one tenant (the console lists
    them). Its count is updated in each batch's transaction; `finished_at` stays empty when
    the run was interrupted (the next run carries on with what is left)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=SweepKind.choices)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    count = models.PositiveIntegerField(default=0)
    batches = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=SweepKind.values), name="sweep_kind_valid")
        ]
        indexes = [
            # the console: a tenant's latest runs
            models.Index(fields=["tenant", "-started_at"], name="sweep_report_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.started_at:%Y-%m-%d %H:%M}: {self.count}"
