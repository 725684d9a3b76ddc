"""The review queue: one Approval per remembered revision that must wait for a person.

A revision with `review: pending` is invisible to every read until its approval is decided.
The approval records why it waits (the reasons, and the spans of the text that fired them, so
the console can mark the words), and who decided what, when, and with what note.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from approvals.review_reasons import review_text
from facts.models import Fact, Revision
from facts.models import Subject as RevisionSubject
from facts.review import REASONS
from kindmem.holds import held_among, held_condition
from kindmem.models import Agent, Project, Run, Tenant, User
from kindmem.subjects import Subject
from kindmem.tenant_keys import TenantForeignKey, TenantOneToOneField, TenantOwned


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "waiting for a reviewer"
    APPROVED = "approved", "approved: readable, still unverified"
    REJECTED = "rejected", "rejected: never readable"
    VERIFIED = "verified", "approved and verified"
    # Not a decision: the agent wrote a new value for the slot before anyone decided, and
    # that new revision is reviewed on its own.
    SUPERSEDED = "superseded", "replaced by the agent before a decision"


DECIDED = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.VERIFIED)


class ApprovalQuerySet(models.QuerySet["Approval"]):
    def of_tenant(self, tenant_id: uuid.UUID | str) -> ApprovalQuerySet:
        return self.filter(tenant_id=tenant_id)

    def about(self, subject: Subject) -> ApprovalQuerySet:
        """Approvals about `subject`: of its facts' revisions (`Fact.objects.about`), or made
        in its runs (they copy words of the memory and may name the person in a note)."""
        # By the approval's own copy of its fact: a join to the revisions (or a probe of one
        # per approval) read the wide revisions table (bench/console_pages.py, 100,000 facts,
        # the person with 13,000 facts: 545 ms by a join, 55 ms by a probe per approval).
        return self.filter(
            Q(fact_id__in=Fact.objects.ids_about(subject))
            | Q(run_id__in=Run.objects.about(subject).values("pk"))
        )

    def not_held(self) -> ApprovalQuerySet:
        """Approvals no erasure in progress holds: not about a held person or conversation by
        their fact's scope, their revision's subjects or the run that wrote them (what `about`
        finds for the erasure). A held person's memory waiting for review reads as nothing,
        and is not there to decide, until the erasure has removed it."""
        held_subject = held_among(
            lambda outer: RevisionSubject.objects.filter(
                tenant_id=outer("tenant_id"), revision_id=outer("revision_id")
            )
        )
        return (
            self.exclude(held_condition("revision__fact__"))
            .exclude(held_subject)
            .exclude(held_condition("run__"))
        )

    def pending(self) -> ApprovalQuerySet:
        return self.filter(status=ApprovalStatus.PENDING)

    def queue(self) -> ApprovalQuerySet:
        """What a reviewer works through: pending, oldest first, ready to render."""
        return (
            self.pending()
            .select_related("revision__fact", "agent", "project", "run")
            .prefetch_related("revision__subjects")
            .order_by("created_at", "id")
        )


class Approval(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # One approval per revision: a replayed remember finds it, never opens a second.
    revision = TenantOneToOneField(Revision, on_delete=models.CASCADE, related_name="approval")
    # The revision's fact, copied (a revision never changes its fact; `save` sets it): "the
    # approvals about a person" is then one hashed lookup of the person's facts, not a probe
    # of the wide revisions table per approval in the tenant (bench/console_pages.py).
    fact = TenantForeignKey(Fact, on_delete=models.CASCADE, related_name="+", editable=False)
    # Denormalized from the revision and its run, for the queue's filters without joins.
    agent = TenantForeignKey(Agent, on_delete=models.SET_NULL, null=True, related_name="+")
    agent_version = models.CharField(max_length=50, blank=True)
    project = TenantForeignKey(Project, on_delete=models.SET_NULL, null=True, related_name="+")
    run = TenantForeignKey(Run, on_delete=models.SET_NULL, null=True, related_name="+")
    reasons = ArrayField(models.CharField(max_length=30))
    # [{"reason", "rule", "start", "end", "match"}]: character offsets into the text.
    findings = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=12, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    # "user:<id>" or "admin:<key id>", like the facts' attribution; the user when a person.
    decided_by = models.CharField(max_length=200, blank=True)
    decided_by_user = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    note = models.TextField(blank=True, max_length=2000)
    verified_revision = TenantForeignKey(
        Revision, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    objects = ApprovalQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "revision"], name="approval_per_revision"),
            models.CheckConstraint(
                condition=Q(status__in=ApprovalStatus.values), name="approval_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(reasons__contained_by=list(REASONS)) & ~Q(reasons=[]),
                name="approval_reasons_known",
            ),
            models.CheckConstraint(
                condition=Q(status=ApprovalStatus.PENDING, decided_at__isnull=True)
                | (~Q(status=ApprovalStatus.PENDING) & Q(decided_at__isnull=False)),
                name="approval_decided_has_time",
            ),
        ]
        indexes = [
            # the queue with every status ("all"), oldest first, a page at a time
            models.Index(fields=["tenant", "created_at", "id"], name="approval_by_time"),
            # the front page's "your recent decisions", newest first
            models.Index(
                fields=["tenant", "decided_by_user", "-decided_at"],
                condition=Q(decided_at__isnull=False),
                name="approval_decided_by",
            ),
            # the review queue: a tenant's pending approvals, oldest first
            models.Index(
                fields=["tenant", "created_at"],
                condition=Q(status="pending"),
                name="approval_queue",
            ),
        ]
        permissions = [("decide_approval", "Can approve, reject and verify pending memories")]

    def __str__(self) -> str:
        return f"approval {self.id} ({self.status})"

    def save(self, *args: object, **kwargs: object) -> None:
        if self.fact_id is None and self.revision_id is not None:
            self.fact_id = (
                self.revision.fact_id
                if Approval.revision.is_cached(self)
                else Revision.objects.values_list("fact_id", flat=True).get(pk=self.revision_id)
            )
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def text(self) -> str:
        """The memory as the reviewer reads it, the text the findings' offsets point into."""
        return review_text(self.revision.content)
