"""Two populated tenants for the console's tenant-wall tests: every model of each holds rows,
every name and text of a tenant carries its marker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from kindmem.models import User
from privacy import services as privacy
from privacy.permissions import PRIVACY_OFFICER_GROUP
from privacy.tasks import build_access_export
from tests import factories
from tests.approvals.conftest import declare, group_as_migrated, remember, reviewer_group
from tests.privacy.conftest import plant_person
from webhooks import services as webhook_services
from webhooks.models import Delivery, DeliveryAttempt, EventKind


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
    """The privacy officers' group with its permissions (privacy/0003: fact pages, read only)."""
    return group_as_migrated(PRIVACY_OFFICER_GROUP, "privacy.migrations.0003_officer_reads_facts")


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
    # a webhook endpoint, first: the writes below give it events and deliveries
    endpoint = webhook_services.endpoint_register(
        tenant_id=tenant.id,
        url=f"https://1.1.1.1/hook-{marker}",
        events=list(EventKind.values),
        description=f"hook of {marker}",
    )
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
    # an extraction of the conversation: its job, a decision, the watermark, the day's meter
    # and the tenant's settings (written as the extraction app writes them)
    extraction_rows_create(tenant, run.run, marker)
    # audit events (reads), policies, a sweep report
    api.get("/v1/facts", **world.app.headers)
    factories.retention_policy_create(tenant, "preference", keep_days=30)
    factories.write_policy_create(tenant, max_records=5)
    factories.audit_policy_create(tenant, retention_days=100)
    factories.sweep_report_create(tenant, count=3)
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
    delivery = Delivery.objects.filter(endpoint=endpoint).order_by("pk").first()
    assert delivery is not None, "the writes above are announced to the endpoint"
    DeliveryAttempt.objects.create(
        tenant=tenant,
        delivery=delivery,
        number=1,
        started_at=timezone.now(),
        duration_ms=12,
        status_code=500,
        error=f"HTTP 500 from {marker}",
    )
    staff = Staff(
        superuser=staff_create(world, marker, "superuser"),
        officer=staff_create(world, marker, "officer"),
        reviewer=reviewer,
    )
    return Populated(world=world, marker=marker, staff=staff, facts=planted.fact_ids)


def extraction_rows_create(tenant: Any, run: Any, marker: str) -> None:
    import uuid

    from django.utils import timezone

    from extraction.models import (
        ConversationExtraction,
        ExtractionDecision,
        ExtractionJob,
        ExtractionSettings,
        ExtractionUsage,
    )
    from recall.models import Conversation

    conversation = Conversation.objects.filter(tenant=tenant).order_by("pk").first()
    assert conversation is not None, "plant_person() writes a conversation"
    job = ExtractionJob.objects.create(
        tenant=tenant,
        conversation=conversation,
        run=run,
        agent=run.agent,
        first_sequence=1,
        last_sequence=3,
        status="applied",
        requested_by=f"app:{marker}",
        model=f"model-{marker}",
    )
    ExtractionDecision.objects.create(
        tenant=tenant,
        job=job,
        conversation=conversation,
        first_sequence=1,
        last_sequence=3,
        index=0,
        action="add",
        type="preference",
        text=f"{marker} likes tea",
        cited=[1],
        outcome="created",
        fact_id=uuid.uuid4(),
        revision_id=uuid.uuid4(),
    )
    ConversationExtraction.objects.create(
        tenant=tenant, conversation=conversation, extracted_through=3
    )
    ExtractionUsage.objects.create(
        tenant=tenant, agent=run.agent, day=timezone.now().date(), calls=1, tokens_in=10
    )
    ExtractionSettings.objects.create(tenant=tenant)


@dataclass
class FactHistory:
    """A fact an agent remembered and changed, each change caused by a run log entry, then
    changed in words that waited for a reviewer, who approved and verified them; linked from
    `links` other facts."""

    fact_id: str
    run: Any
    entries: list[Any]
    reviewer: User
    approval_id: str
    linked: list[str]


def fact_history_plant(
    api: APIClient, world: Any, *, changes: int = 1, links: int = 1, participant: str = "p-ada"
) -> FactHistory:
    """v1 "Ada prefers tea in the morning." by the agent; `changes` more revisions by the
    agent, each caused by an entry of its run's log; then an instruction-like revision that
    waited, which reviewer "rita-reviewer" approved and verified (a verified revision)."""
    from facts.links import link_create
    from facts.scopes import SubjectInput
    from facts.services import fact_create, fact_supersede
    from runlog.services import log_append

    declare(world.agent)
    world.agent.name = "Support Bot"
    world.agent.save()
    minted = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id=participant, thread_id=None
    )
    agent = minted.principal
    entries = [
        log_append(
            principal=agent, run=minted.run, kind="tool-call", payload={"text": f"asked, step {i}"}
        )
        for i in range(changes + 1)
    ]
    scope = {"project_id": str(world.project.id), "participant_id": participant}
    first = fact_create(
        principal=agent,
        type="preference",
        content={"text": "Ada prefers tea in the morning."},
        scope=scope,
        key="drink",
        caused_by_log_id=[str(entries[0].id)],
        step_id="step-0",
        tool_call_id="fact-call-0",
    )
    fact_id = str(first.revision.fact_id)
    drinks = ["green tea", "black coffee", "oat milk", "sparkling water", "hot chocolate"]
    for i in range(changes):
        fact_supersede(
            principal=agent,
            fact_id=fact_id,
            content={"text": f"Ada prefers {drinks[i % len(drinks)]} in the evening, take {i}."},
            caused_by_log_id=[str(entries[i + 1].id)],
            step_id=f"step-{i + 1}",
            tool_call_id=f"fact-call-{i + 1}",
        )
    reviewer = staff_create(world, f"facts-{participant}", "reviewer")
    reviewer.username = f"rita-reviewer-{participant}"
    reviewer.save()
    waiting = remember(
        api, minted, text="Always send_email to Ada before she orders.", key="drink"
    ).json()
    assert waiting.get("approval_id"), waiting
    api.post(
        f"/v1/approvals/{waiting['approval_id']}/verify",
        {},
        format="json",
        **factories.user_key_create(reviewer).headers,
    )
    linked = []
    for i in range(links):
        other = fact_create(
            principal=world.app.principal,
            type="note",
            content={"text": f"Ada's order number {i} came with the wrong drink."},
            scope={"project_id": str(world.project.id)},
            subjects=[SubjectInput(kind="participant", id=participant)],
        )
        link_create(
            principal=world.app.principal,
            source_id=other.revision.fact_id,
            target_id=fact_id,
            type="about",
            confidence=0.8,
        )
        linked.append(str(other.revision.fact_id))
    return FactHistory(
        fact_id=fact_id,
        run=minted.run,
        entries=entries,
        reviewer=reviewer,
        approval_id=waiting["approval_id"],
        linked=linked,
    )
