"""The demo tenant that `kindmem run` creates: people, keys and agents to try kindmem with."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from django.contrib.auth.models import Group
from django.db import transaction

from kindmem import services
from kindmem.access import Principal, PrincipalKind
from kindmem.models import Agent, ApiKey, Org, Project, Tenant, User

DEMO_TENANT = "demo"
DEMO_KEY_NAMES = ("demo admin key", "demo app key")
DEMO_DECLARATIONS = [
    {"type": "preference", "scope": "participant", "keep_days": 90},
    {"type": "profile", "scope": "user", "keep_days": 180},
    {"type": "note", "scope": "thread", "keep_days": 30},
    {"type": "product-insight", "scope": "same-project", "keep_days": 365},
]

# A remembered text naming one of these reads like an instruction (approvals/review_reasons.py).
DEMO_TOOLS = ["send_email", "create_ticket", "refund_order"]


@dataclass
class DemoCredentials:
    tenant: Tenant
    project: Project
    passwords: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    # the demo's end users (participant ids), to try subject access and erasure on
    people: dict[str, str] = field(default_factory=dict)


@transaction.atomic
def demo_seed(*, review_extractions: bool = False) -> DemoCredentials:
    """Create (or refresh) the demo tenant. Passwords and keys are new on every call, since
    neither is stored in a form that could be shown again; earlier demo keys are revoked.
    `review_extractions` (`kindmem run --scripted-model`): every extracted memory waits for a
    reviewer, so a newcomer sees an extraction go through review."""
    tenant, _ = Tenant.objects.get_or_create(name=DEMO_TENANT)
    org, _ = Org.objects.get_or_create(tenant=tenant, name="Acme")
    project, _ = Project.objects.get_or_create(tenant=tenant, org=org, name="Acme Support")
    creds = DemoCredentials(tenant=tenant, project=project)
    people = [
        ("admin", {"is_staff": True, "is_superuser": True}, []),
        ("reviewer", {"is_staff": True}, ["reviewer"]),
        ("privacy", {"is_staff": True}, ["privacy-officer"]),
    ]
    for username, flags, groups in people:
        user, _ = User.objects.get_or_create(username=username, defaults={"tenant": tenant})
        for name, value in {**flags, "tenant": tenant}.items():
            setattr(user, name, value)
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        user.projects.add(project)
        user.orgs.add(org)
        user.groups.set(Group.objects.filter(name__in=groups))
        creds.passwords[username] = password
    for agent_id, version in (("support-bot", "1.0.0"), ("onboarding-bot", "0.3.1")):
        Agent.objects.update_or_create(
            tenant=tenant,
            agent_id=agent_id,
            defaults={
                "version": version,
                "memory_declarations": DEMO_DECLARATIONS,
                "tools": DEMO_TOOLS,
            },
        )
    for key in ApiKey.objects.filter(tenant=tenant, name__in=DEMO_KEY_NAMES, revoked_at=None):
        services.api_key_revoke(key=key)
    admin_key, creds.keys["admin"] = services.api_key_create(
        tenant=tenant, kind=PrincipalKind.ADMIN, name="demo admin key"
    )
    app_key, creds.keys["app"] = services.api_key_create(
        tenant=tenant, kind=PrincipalKind.APP, name="demo app key", projects=[project]
    )
    from facts.demo import DEMO_CUSTOMER, demo_facts_seed  # facts builds on kindmem

    demo_facts_seed(
        principal=Principal(kind=PrincipalKind.ADMIN, tenant_id=tenant.id, api_key=admin_key),
        project=project,
    )
    from approvals.demo import DEMO_RUN_CUSTOMER, demo_approvals_seed

    demo_approvals_seed(app_key=app_key, project=project)
    if review_extractions:
        from extraction.services import extraction_settings_set

        extraction_settings_set(tenant_id=tenant.id, review_all=True)
    creds.people = {
        DEMO_CUSTOMER: "2 preferences (language, plan)",
        DEMO_RUN_CUSTOMER: "a support-bot run's remembered memories, in the review queue",
    }
    return creds
