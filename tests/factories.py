"""Typed factories for tenants, principals and runs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from kindmem import services
from kindmem.access import Principal, PrincipalKind
from kindmem.models import Agent, ApiKey, Org, Project, Run, Tenant, User

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
