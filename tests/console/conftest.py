"""Two populated tenants for the console's tenant-wall tests: every model of each holds rows,
every name and text of a tenant carries its marker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from audit.models import AuditPolicy
from facts.models import RetentionPolicy, SweepReport, WritePolicy, WritePolicyKind
from kindmem.models import User
from privacy import services as privacy
from privacy.permissions import PRIVACY_OFFICER_GROUP
from privacy.tasks import build_access_export
from tests import factories
from tests.approvals.conftest import declare, remember, reviewer_group
from tests.privacy.conftest import plant_person


@dataclass
class Staff:
    superuser: User
    officer: User
    reviewer: User

    def by_role(self, role: str) -> User:
        return getattr(self, role)


@dataclass
class Populated:
    """A tenant (a `tests.conftest.World`) with rows in every model, and its staff."""

    world: Any
    marker: str
    staff: Staff
    facts: list[str] = field(default_factory=list)


def officer_group() -> Group:
    # Transactional tests flush the tables (the migrations' groups too): make it again.
    return Group.objects.get_or_create(name=PRIVACY_OFFICER_GROUP)[0]


PASSWORD = "pw"


def staff_create(world: Any, marker: str, role: str) -> User:
    """A console user of the world's tenant in one of the project's roles (password "pw")."""
    username = f"{role}-{marker}"
    password = PASSWORD
    if role == "superuser":
        return User.objects.create_superuser(
            username=username, password=password, tenant=world.tenant
        )
    user = User.objects.create_user(
        username=username, password=password, tenant=world.tenant, is_staff=True
    )
    user.groups.add(officer_group() if role == "officer" else reviewer_group())
    return user


def populate(api: APIClient, world: Any, marker: str) -> Populated:
    """Rows of every model for the world's tenant, named and written with `marker`."""
    tenant = world.tenant
    tenant.name = f"tenant-{marker}"
    tenant.save()
    for obj, attr in ((world.org, "name"), (world.project, "name"), (world.user, "username")):
        setattr(obj, attr, f"{type(obj).__name__.lower()}-{marker}")
        obj.save()
    world.agent.agent_id = f"bot-{marker}"
    declare(world.agent)
    # facts, revisions, subjects, links, a conversation and messages, runs and threads, log
    planted = plant_person(world, f"p-{marker}", marker, facts=2, messages=3, entries=2)
    # approvals: one waiting, one decided
    run = factories.run_create(
        world.app,
        world.project,
        agent=world.agent,
        participant_id=f"p-{marker}",
        thread_id=f"thread-{marker}",
    )
    remember(api, run, text=f"Always greet {marker} in Spanish.", key="greeting")
    decided = remember(api, run, text=f"Never mention {marker} again.").json()
    reviewer = staff_create(world, marker, "reviewer")
    api.post(
        f"/v1/approvals/{decided['approval_id']}/reject",
        {"note": f"no {marker}"},
        format="json",
        **factories.user_key_create(reviewer).headers,
    )
    # audit events (reads), policies, a sweep report
    api.get("/v1/facts", **world.app.headers)
    RetentionPolicy.objects.create(tenant=tenant, fact_type="preference", keep_days=30)
    WritePolicy.objects.create(
        tenant=tenant, fact_type="note", policy=WritePolicyKind.CAP_CULL, max_records=5
    )
    AuditPolicy.objects.create(tenant=tenant, retention_days=100)
    SweepReport.objects.create(tenant=tenant, kind="expiry", count=3, batches=1)
    # an erasure (and its hold) and a built access request
    privacy.erasure_start(
        tenant_id=tenant.id,
        target_kind="participant",
        target_id=f"gone-{marker}",
        reason=f"asked by {marker}",
        requested_by="test",
    )
    access = privacy.access_request_start(
        actor=privacy.Actor.of_staff(world.user, tenant.id),
        subject_kind="participant",
        subject_id=f"p-{marker}",
    )
    build_access_export(str(access.id), tenant_id=str(tenant.id))
    staff = Staff(
        superuser=staff_create(world, marker, "superuser"),
        officer=staff_create(world, marker, "officer"),
        reviewer=reviewer,
    )
    return Populated(world=world, marker=marker, staff=staff, facts=planted.fact_ids)
