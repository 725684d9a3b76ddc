"""Tenancy and credentials: tenants, orgs, projects, Kindgi users, agents, API keys and runs."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from kindmem.declarations import validate_memory_declarations, validate_tools
from kindmem.tenant_keys import TenantForeignKey, TenantOwned


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class Org(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="orgs")
    name = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="org_name_per_tenant")
        ]

    def __str__(self) -> str:
        return self.name


class Project(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="projects")
    org = TenantForeignKey(Org, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="project_name_per_tenant")
        ]

    def __str__(self) -> str:
        return self.name


class User(AbstractUser):
    """A Kindgi user: a person of one tenant (platform superusers have none)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="users", null=True, blank=True
    )
    # Reference tables on Citus (deploy/citus.md), so no database constraint to a distributed
    # table: Django deletes the rows with the key, the user or the project.
    orgs = models.ManyToManyField(Org, related_name="members", blank=True, db_constraint=False)
    projects = models.ManyToManyField(
        Project, related_name="members", blank=True, db_constraint=False
    )


class Agent(TenantOwned):
    """An agent of a tenant, by its own id and version, with what it may remember."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.SlugField(max_length=100, help_text="The agent's own id, e.g. 'support-bot'.")
    version = models.CharField(max_length=50, default="1")
    name = models.CharField(max_length=200, blank=True)
    # The fact types it may remember, each with the scope it lands in and keep_days
    # (kindmem/declarations.py says what a valid list is).
    memory_declarations = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_memory_declarations],
        help_text='e.g. [{"type": "preference", "scope": "participant", "keep_days": 90}]; '
        "scope is one of participant, user, thread, same-project, tenant.",
    )
    # The names of its tools: a remembered text naming one reads like an instruction.
    tools = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_tools],
        help_text='e.g. ["send_email", "refund_order"]',
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "agent_id"], name="agent_id_per_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}@{self.version}"

    def clean(self) -> None:
        super().clean()
        validate_memory_declarations(self.memory_declarations)
        validate_tools(self.tools)


class KeyKind(models.TextChoices):
    """The kinds of API key (`kindmem.access.PrincipalKind` adds runs)."""

    ADMIN = "admin", "tenant admin"
    USER = "user", "Kindgi user"
    APP = "app", "app (for all end users of its projects)"


class ApiKey(TenantOwned):
    """A long-lived credential. The key is shown once; only its SHA-256 is stored.

    Keys are 256-bit random tokens, so a fast hash is as safe as a slow one here (nothing to
    brute-force), and the lookup by `prefix` stays one indexed row.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    kind = models.CharField(max_length=10, choices=KeyKind.choices)
    name = models.CharField(max_length=200)
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys"
    )
    projects = models.ManyToManyField(
        Project, blank=True, related_name="app_keys", db_constraint=False
    )
    # Unique per tenant (a distributed table's keys include the tenant); random, so one globally.
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "prefix"], name="api_key_prefix_per_tenant"),
            models.CheckConstraint(condition=Q(kind__in=KeyKind.values), name="api_key_kind_valid"),
            models.CheckConstraint(
                condition=~Q(kind=KeyKind.USER) | Q(user__isnull=False),
                name="user_key_names_its_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, kmk_{self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class RunQuerySet(models.QuerySet):
    def about(self, subject: Any) -> RunQuerySet:
        """The rows (runs, threads) that name `subject` (a `kindmem.subjects.Subject`): its
        participant, its Kindgi user or its thread; an external subject names none."""
        column = {
            "participant": "participant_id",
            "user": "user_id",
            "conversation": "thread_id",
        }.get(subject.kind)
        if column is None:
            return self.none()
        return self.filter(**{column: subject.id})


class Run(TenantOwned):
    """One agent run: the containers its calls act in, and the hash of its short-lived token."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="runs")
    agent = TenantForeignKey(Agent, on_delete=models.PROTECT, related_name="runs")
    agent_version = models.CharField(max_length=50)
    project = TenantForeignKey(Project, on_delete=models.PROTECT, related_name="runs")
    participant_id = models.CharField(max_length=200, null=True, blank=True)
    user = models.ForeignKey(
        User, on_delete=models.PROTECT, null=True, blank=True, related_name="runs"
    )
    thread_id = models.CharField(max_length=200, null=True, blank=True)
    session_id = models.CharField(max_length=200, null=True, blank=True)
    # RESTRICT: a key that minted runs is not deleted, except along with those runs (a
    # tenant's deletion); it is revoked, which ends its runs. SET_NULL used to let a deleted
    # key's runs authenticate again. Nullable only for runs orphaned before that changed;
    # the authenticator refuses them.
    minted_by = TenantForeignKey(
        ApiKey, on_delete=models.RESTRICT, null=True, blank=True, related_name="runs"
    )
    token_prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    objects = RunQuerySet.as_manager()

    class Meta:
        indexes = [
            # erasure and access requests find a person's runs
            models.Index(fields=["tenant", "participant_id"], name="run_by_participant"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "token_prefix"], name="run_token_prefix_per_tenant"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.id}"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()


class Thread(TenantOwned):
    """Whom a thread belongs to: the project and the person of its first use.

    A thread id opens what is scoped to it (a run's `thread_ids`), so it must not be a
    capability that anyone who guesses the string may claim. The first run, conversation or
    fact that names a thread records its project and person here (the participant, else the
    Kindgi user, else no one); every later use must name the same (`kindmem.threads`).
    """

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="threads")
    thread_id = models.CharField(max_length=200)
    project = TenantForeignKey(Project, on_delete=models.CASCADE, related_name="threads")
    participant_id = models.CharField(max_length=200, null=True, blank=True)
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, null=True, blank=True, related_name="threads"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = RunQuerySet.as_manager()  # `about(subject)`: the same three person columns

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "thread_id"], name="one_owner_per_thread"),
        ]
        indexes = [
            # erasure finds a person's threads
            models.Index(fields=["tenant", "participant_id"], name="thread_by_participant"),
        ]

    def __str__(self) -> str:
        return f"thread {self.thread_id}"


class WorkerHeartbeat(models.Model):
    """The last time each worker ran the heartbeat task: /healthz reports worker liveness."""

    hostname = models.CharField(max_length=200, primary_key=True)
    seen_at = models.DateTimeField()
    token = models.CharField(max_length=64, blank=True)
    # What the worker's last probe of the outside world found (the embedder's and the chat
    # model's servers: config/tasks.py), so that /healthz reports it without calling them.
    checks = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return self.hostname


class SubjectKind(models.TextChoices):
    PARTICIPANT = "participant", "an app's end user"
    USER = "user", "a Kindgi user"
    EXTERNAL = "external", "an external subject id"
    CONVERSATION = "conversation", "one conversation"


class ErasureHold(TenantOwned):
    """While a row exists, nothing new lands for that person (or conversation) and reads of
    their data return nothing. The privacy app creates it when it accepts an erasure and
    removes it when the erasure completes; every write path checks it (`kindmem.holds`).

    It lives here, below every app, because facts, recall and the run log all consult it and
    imports run one way (kindmem <- facts <- recall, privacy).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="erasure_holds")
    subject_kind = models.CharField(max_length=20, choices=SubjectKind.choices)
    subject_id = models.CharField(max_length=200)
    erasure_id = models.UUIDField(help_text="The privacy app's erasure request.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "subject_kind", "subject_id", "erasure_id"],
                name="one_hold_per_erasure_and_subject",
            ),
        ]
        indexes = [
            # the write-path check: is this person held?
            models.Index(fields=["tenant", "subject_kind", "subject_id"], name="hold_by_subject"),
        ]

    def __str__(self) -> str:
        return f"hold {self.subject_kind}:{self.subject_id}"
