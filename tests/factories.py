"""Typed factories for tenants, principals and runs, and for the rows tests build straight in
the tables (holds, heartbeats, policies, facts, revisions, links, requests)."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from audit.models import AuditPolicy
from facts.models import (
    Fact,
    Link,
    RetentionPolicy,
    Revision,
    SweepReport,
    WritePolicy,
    WritePolicyKind,
)
from kindmem import services
from kindmem.access import Principal, PrincipalKind
from kindmem.models import (
    Agent,
    ApiKey,
    ErasureHold,
    Org,
    Project,
    Run,
    Tenant,
    User,
    WorkerHeartbeat,
)
from privacy.models import AccessRequest

_seq = itertools.count(1)


def tenant_create(name: str | None = None) -> Tenant:
    return Tenant.objects.create(name=name or f"tenant-{next(_seq)}")


def org_create(tenant: Tenant, name: str | None = None) -> Org:
    return Org.objects.create(tenant=tenant, name=name or f"org-{next(_seq)}")


def project_create(tenant: Tenant, org: Org | None = None, name: str | None = None) -> Project:
    org = org or org_create(tenant)
    return Project.objects.create(tenant=tenant, org=org, name=name or f"project-{next(_seq)}")


def user_create(tenant: Tenant, *, projects: list[Project] = (), orgs: list[Org] = ()) -> User:  # type: ignore[assignment]
    user = User.objects.create_user(username=f"user-{next(_seq)}", password="pw", tenant=tenant)
    user.projects.set(projects)
    user.orgs.set(orgs)
    return user


def agent_create(tenant: Tenant, agent_id: str = "support-bot", version: str = "1.0.0") -> Agent:
    return Agent.objects.create(tenant=tenant, agent_id=agent_id, version=version)


@dataclass
class Keyed:
    key: ApiKey
    token: str

    @property
    def principal(self) -> Principal:
        return Principal(
            kind=self.key.kind, tenant_id=self.key.tenant_id, api_key=self.key, user=self.key.user
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}


def admin_key_create(tenant: Tenant) -> Keyed:
    return Keyed(*services.api_key_create(tenant=tenant, kind=PrincipalKind.ADMIN, name="admin"))


def app_key_create(tenant: Tenant, projects: list[Project]) -> Keyed:
    return Keyed(
        *services.api_key_create(
            tenant=tenant, kind=PrincipalKind.APP, name="app", projects=projects
        )
    )


def user_key_create(user: User) -> Keyed:
    assert user.tenant is not None
    return Keyed(
        *services.api_key_create(tenant=user.tenant, kind=PrincipalKind.USER, name="u", user=user)
    )


@dataclass
class Minted:
    run: Run
    token: str

    @property
    def principal(self) -> Principal:
        return Principal(
            kind=PrincipalKind.RUN, tenant_id=self.run.tenant_id, run=self.run, user=self.run.user
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}


def run_create(
    app: Keyed,
    project: Project,
    *,
    agent: Agent | None = None,
    participant_id: str | None = "participant-1",
    user: User | None = None,
    thread_id: str | None = "thread-1",
) -> Minted:
    """A run minted as a caller would: for an end user with the app's key, or, given `user`,
    for that Kindgi user with a key of their own (an app never mints a run for a user)."""
    agent = agent or Agent.objects.filter(tenant_id=project.tenant_id).first()
    if agent is None:
        agent = agent_create(project.tenant)
    minter = app
    if user is not None:
        if app.key.kind != PrincipalKind.USER:
            minter = user_key_create(user)
        participant_id = None if participant_id == "participant-1" else participant_id
    run, token = services.run_mint(
        principal=minter.principal,
        agent_id=agent.agent_id,
        project_id=str(project.id),
        participant_id=participant_id,
        user_id=str(user.id) if user else None,
        thread_id=thread_id,
    )
    return Minted(run, token)


def hold_create(
    tenant: Tenant,
    subject_kind: str = "participant",
    subject_id: str = "participant-1",
    *,
    erasure_id: uuid.UUID | str | None = None,
) -> ErasureHold:
    """A hold on one person (or conversation), as an erasure in progress leaves it."""
    return ErasureHold.objects.create(
        tenant=tenant,
        subject_kind=subject_kind,
        subject_id=subject_id,
        erasure_id=erasure_id or uuid.uuid4(),
    )


def heartbeat_create(hostname: str = "w1", seen_at: datetime | None = None) -> WorkerHeartbeat:
    """A worker's heartbeat, seen now unless told."""
    return WorkerHeartbeat.objects.create(hostname=hostname, seen_at=seen_at or timezone.now())


def retention_policy_create(
    tenant: Tenant, fact_type: str = "note", *, keep_days: int | None = None
) -> RetentionPolicy:
    return RetentionPolicy.objects.create(tenant=tenant, fact_type=fact_type, keep_days=keep_days)


def write_policy_create(
    tenant: Tenant,
    fact_type: str = "note",
    *,
    policy: str = WritePolicyKind.CAP_CULL,
    max_records: int | None = 5,
) -> WritePolicy:
    """A bounded ring (cap-cull) of `max_records` per scope, unless told another policy."""
    return WritePolicy.objects.create(
        tenant=tenant, fact_type=fact_type, policy=policy, max_records=max_records
    )


def audit_policy_create(
    tenant: Tenant, *, retention_days: int = 365, record_query_text: bool = False
) -> AuditPolicy:
    return AuditPolicy.objects.create(
        tenant=tenant, retention_days=retention_days, record_query_text=record_query_text
    )


def sweep_report_create(
    tenant: Tenant, kind: str = "expiry", *, count: int = 0, batches: int = 1
) -> SweepReport:
    return SweepReport.objects.create(tenant=tenant, kind=kind, count=count, batches=batches)


def fact_create(tenant: Tenant, type: str = "note", **fields: Any) -> Fact:
    """A fact row alone (no revision), straight to the table: `fields` are its scope and
    slot columns."""
    return Fact.objects.create(tenant=tenant, type=type, **fields)


def revision_create(
    fact: Fact, *, version: int = 1, content: Any = "a fact", **fields: Any
) -> Revision:
    """A revision of `fact`, straight to the table (the API's write core is
    `facts/revisions.py`): attributed to a service, its hash taken from `content` unless
    told."""
    fields.setdefault("content_hash", str(content))
    fields.setdefault("attributed_kind", "service")
    fields.setdefault("attributed_id", "test")
    return Revision.objects.create(
        tenant_id=fact.tenant_id, fact=fact, version=version, content=content, **fields
    )


def link_create(
    source: Fact,
    target: Fact,
    type: str = "related",
    *,
    confidence: float | None = None,
    created_by: str = "test",
) -> Link:
    return Link.objects.create(
        tenant_id=source.tenant_id,
        source=source,
        target=target,
        type=type,
        confidence=confidence,
        created_by=created_by,
    )


def access_request_create(
    tenant: Tenant,
    subject_kind: str = "participant",
    subject_id: str = "participant-1",
    *,
    requested_by: str = "admin:test",
    export_json: dict[str, Any] | None = None,
) -> AccessRequest:
    return AccessRequest.objects.create(
        tenant=tenant,
        subject_kind=subject_kind,
        subject_id=subject_id,
        requested_by=requested_by,
        export_json=export_json,
    )
