"""A few facts for the demo tenant, so the console and the API have something to show."""

from __future__ import annotations

from facts import services
from kindmem.access import Principal
from kindmem.models import Project


def demo_facts_seed(*, principal: Principal, project: Project) -> list[services.WriteResult]:
    """Write the demo facts through the services. Safe to call again: the same content in the
    same scope is deduplicated (`unchanged`), so a refresh adds nothing."""
    in_project = {"project_id": str(project.id)}
    facts = [
        (
            "product-insight",
            {"text": "Customers ask for a dark mode in the mobile app."},
            in_project,
        ),
        (
            "preference",
            {"text": "Prefers answers in Portuguese.", "key": "language"},
            {**in_project, "participant_id": "demo-customer-1"},
        ),
        (
            "preference",
            {"text": "Uses the Pro plan, billed yearly.", "key": "plan"},
            {**in_project, "participant_id": "demo-customer-1"},
        ),
        ("policy", {"text": "Refunds are possible within 30 days of purchase."}, {}),
    ]
    results = [
        services.fact_create(principal=principal, type=type_, content=content, scope=scope)
        for type_, content, scope in facts
    ]
    first, plan = results[0], results[2]
    services.link_create(
        principal=principal,
        source_id=plan.revision.fact_id,
        target_id=first.revision.fact_id,
        type="related",
        confidence=0.4,
    )
    return results
