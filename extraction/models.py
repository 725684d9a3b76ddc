"""Extraction's tables: the jobs (one per conversation and message range), the decisions each
applied (one per (conversation, message range, decision), a unique key), each conversation's
watermark, the tokens spent per tenant, agent and day, and a tenant's settings.

A conversation's *watermark* is the last message sequence an applied extraction covered; the
next extraction starts after it. It moves only in the transaction that applies a job's
decisions, so a job that is retried, duplicated or refused leaves it where it was, and a job
whose range no longer starts right after it (another applied first) is stale and writes
nothing.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q, Sum
from django.utils import timezone

from kindmem.models import Agent, Run, Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOneToOneField, TenantOwned
from recall.models import Conversation


class JobStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running: the model is asked"
    APPLIED = "applied", "applied: its decisions are written"
    REFUSED = "refused", "refused: the answer or a write was refused whole, nothing written"
    FAILED = "failed", "failed: the model did not answer"


ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


class Action(models.TextChoices):
    ADD = "add", "add a memory of a declared type"
    UPDATE = "update", "propose the next value of an existing memory"


class DecisionOutcome(models.TextChoices):
    CREATED = "created", "written (readable, or waiting for review)"
    PROPOSED = "proposed", "a proposed supersede, waiting for a reviewer"
    UNCHANGED = "unchanged", "the same content is there already (dedup)"


class ExtractionJobQuerySet(models.QuerySet["ExtractionJob"]):
    def of_tenant(self, tenant_id: uuid.UUID | str) -> ExtractionJobQuerySet:
        return self.filter(tenant_id=tenant_id)

    def active(self) -> ExtractionJobQuerySet:
        return self.filter(status__in=ACTIVE)

    def stale(self, queued_before: object, running_before: object) -> ExtractionJobQuerySet:
        """Queued before `queued_before` and never started, or started before `running_before`
        and never finished: what `resume_extractions` queues again."""
        return self.filter(
            Q(status=JobStatus.QUEUED, created_at__lt=queued_before)
            | Q(status=JobStatus.RUNNING, started_at__lt=running_before)
        )


class ExtractionJob(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation = TenantForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="extraction_jobs"
    )
    # The run the decisions are written as: the conversation's agent, project and person, with
    # no token (it never authenticates; kindmem.services.run_start_internal).
    run = TenantForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    agent = TenantForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    first_sequence = models.PositiveIntegerField()
    last_sequence = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    # who asked: "run:<id>", "app:<key id>" (`Principal.id`), or "after-append"
    requested_by = models.CharField(max_length=200)
    attempts = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=50, blank=True)
    response_format = models.CharField(max_length=20, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    usage_estimated = models.BooleanField(default=False)
    # a refusal's or failure's code (`unparseable`, `undeclared-type`, `cites-outside-range`,
    # `unknown-memory`, `erasure-in-progress`, ...) and what it says
    error_code = models.CharField(max_length=50, blank=True)
    error = models.TextField(blank=True)
    # A refused answer as the model gave it (truncated), for the operator to see why: words of
    # the conversation, so it goes with the conversation (CASCADE) and its erasure.
    answer = models.TextField(blank=True)
    decisions_none = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ExtractionJobQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=JobStatus.values), name="extraction_job_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(first_sequence__gte=1, last_sequence__gte=models.F("first_sequence")),
                name="extraction_job_range_valid",
            ),
            # One extraction at a time per conversation: a second request while one is queued
            # or running answers that one (the ranges of two at once would overlap).
            models.UniqueConstraint(
                fields=["tenant", "conversation"],
                condition=Q(status__in=ACTIVE),
                name="one_active_extraction_per_conversation",
            ),
            # A message range is applied once, whatever retries or duplicates run.
            models.UniqueConstraint(
                fields=["tenant", "conversation", "first_sequence", "last_sequence"],
                condition=Q(status=JobStatus.APPLIED),
                name="one_applied_extraction_per_range",
            ),
        ]
        indexes = [
            # a conversation's extractions, newest first (GET .../extract, the console)
            models.Index(
                fields=["tenant", "conversation", "-created_at"], name="extraction_recent"
            ),
            # resume_extractions: the few queued or running
            models.Index(
                fields=["status", "created_at"],
                condition=Q(status__in=ACTIVE),
                name="extraction_active",
            ),
        ]

    def __str__(self) -> str:
        return f"extraction {self.id} ({self.status})"


class ExtractionDecision(TenantOwned):
    """One decision of an applied extraction and what it wrote. The revision, its fact and its
    approval are facts' and approvals' rows, named by id (no foreign key: their erasure and
    purge delete them on their own terms)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    job = TenantForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="decisions")
    conversation = TenantForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    first_sequence = models.PositiveIntegerField()
    last_sequence = models.PositiveIntegerField()
    index = models.PositiveIntegerField(help_text="The decision's place in the model's answer.")
    action = models.CharField(max_length=10, choices=Action.choices)
    type = models.CharField(max_length=100)
    text = models.TextField()
    # the messages (sequences of the conversation) the decision rests on
    cited = ArrayField(models.PositiveIntegerField())
    outcome = models.CharField(max_length=10, choices=DecisionOutcome.choices)
    fact_id = models.UUIDField()
    revision_id = models.UUIDField()
    # an update's: the revision it would replace (what the reviewer's diff starts from)
    replaces_revision_id = models.UUIDField(null=True, blank=True)
    approval_id = models.UUIDField(null=True, blank=True)
    reasons = ArrayField(models.CharField(max_length=30), default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "conversation", "first_sequence", "last_sequence", "index"],
                name="one_write_per_extraction_decision",
            ),
            models.CheckConstraint(
                condition=Q(action__in=Action.values), name="extraction_decision_action_valid"
            ),
            models.CheckConstraint(
                condition=Q(outcome__in=DecisionOutcome.values),
                name="extraction_decision_outcome_valid",
            ),
        ]
        indexes = [
            # the review console: the evidence of an approval
            models.Index(fields=["tenant", "approval_id"], name="extraction_decision_approval"),
        ]

    def __str__(self) -> str:
        return f"decision {self.job_id}#{self.index} ({self.action})"


class ConversationExtraction(TenantOwned):
    """A conversation's watermark and the tokens its extractions have spent (its cap)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation = TenantOneToOneField(
        Conversation, on_delete=models.CASCADE, related_name="extraction"
    )
    extracted_through = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "conversation"], name="extraction_per_conversation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} through {self.extracted_through}"


class UsageQuerySet(models.QuerySet["ExtractionUsage"]):
    def of_tenant(self, tenant_id: uuid.UUID | str) -> UsageQuerySet:
        return self.filter(tenant_id=tenant_id)

    def tokens_on(self, day: object) -> int:
        """Tokens in and out spent on `day`, by every agent of the queryset's tenant."""
        totals = self.filter(day=day).aggregate(i=Sum("tokens_in"), o=Sum("tokens_out"))
        return int(totals["i"] or 0) + int(totals["o"] or 0)


class ExtractionUsage(TenantOwned):
    """Tokens the provider counted, per tenant, agent and UTC day (the meter and its cap)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    agent = TenantForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    calls = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)

    objects = UsageQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent", "day"], name="one_usage_row_per_agent_and_day"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "day"], name="extraction_usage_by_day")]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.day}: {self.tokens_in}+{self.tokens_out}"


class ExtractionSettings(TenantOwned):
    """A tenant's extraction settings (the console edits them)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="+")
    review_all = models.BooleanField(
        default=False,
        help_text="Every extracted memory waits for a reviewer (reason `extracted`), whatever "
        "its type's review rules say.",
    )
    extract_after_append = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Agents (their agent ids) whose conversations are extracted after each "
        "appended batch of messages.",
    )

    class Meta:
        verbose_name = verbose_name_plural = "extraction settings"

    def __str__(self) -> str:
        return f"extraction settings of {self.tenant_id}"
