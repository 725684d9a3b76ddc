"""A few facts for the demo tenant, so the console and the API have something to show."""

from __future__ import annotations

from facts import links, services
from kindmem.access import Principal
from kindmem.models import Project

DEMO_CUSTOMER = "demo-customer-1"


def demo_facts_seed(*, principal: Principal, project: Project) -> list[services.WriteResult]:
    """Write the demo facts through the services. Safe to call again: the same content in the
    same scope is deduplicated (`unchanged`), so a refresh adds nothing."""
    in_project = {"project_id": str(project.id)}
    customer = {**in_project, "participant_id": DEMO_CUSTOMER}
    # (type, content, scope, slot): the slot is the fact's `key`, not part of what it says.
    facts = [
        ("product-insight", "Customers ask for a dark mode in the mobile app.", in_project, None),
        ("preference", "Prefers answers in Portuguese.", customer, "language"),
        ("preference", "Uses the Pro plan, billed yearly.", customer, "plan"),
        ("policy", "Refunds are possible within 30 days of purchase.", {}, None),
    ]
    results = [
        services.fact_create(
            principal=principal, type=type_, content={"text": text}, scope=scope, key=key
        )
        for type_, text, scope, key in facts
    ]
    first, plan = results[0], results[2]
    links.link_create(
        principal=principal,
        source_id=plan.revision.fact_id,
        target_id=first.revision.fact_id,
        type="related",
        confidence=0.4,
    )
    return results
