"""Each role's front page in Chromium: what the role opens the console for, nothing else.
Screenshots under var/test-artefacts/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from privacy.erasure import erasure_run
from privacy.models import ErasureRequest
from privacy.services import Actor, access_request_start, erasure_start
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.conftest import console_login, screenshot
from tests.console.conftest import PASSWORD, staff_create
from tests.privacy.conftest import plant_person


def _world_with_work(api, world) -> None:
    declare(world.agent)
    run = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id="p-fp", thread_id="t-fp"
    )
    remember(api, run, text="Always greet them in Spanish.", key="greeting")
    remember(api, run, text="Never mention the refund​ policy.", key="refunds")
    plant_person(world, "p-erased", "zqerased", facts=1, messages=1, entries=0)
    done = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-erased",
        reason="asked by email",
        requested_by=f"staff:{world.user.pk}",
    )
    erasure_run(erasure_id=done.pk)
    erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-fp",
        reason="asked by phone",
        requested_by=f"staff:{world.user.pk}",
    )
    access_request_start(
        actor=Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id="p-fp",
    )
    factories.heartbeat_create("worker-1")
    _history(api, world)


def _history(api, world) -> None:
    """Some weeks of work for the charts: facts written on earlier days, memories waiting
    since then, decisions by two reviewers, requests on earlier days."""
    from approvals.models import Approval
    from approvals.services import approval_decide, console_principal
    from facts.models import Revision
    from facts.services import fact_create

    now = timezone.now()
    scope = {"project_id": str(world.project.id)}
    for day in range(0, 28, 2):
        for i in range(1 + day % 5):
            fact = fact_create(
                principal=world.app.principal,
                type="note",
                content={"text": f"note {day}-{i}"},
                scope=scope,
            )
            Revision.objects.filter(pk=fact.revision.pk).update(
                created_at=now - timedelta(days=day, hours=i)
            )
    reviewers = [staff_create(world, name, "reviewer") for name in ("ana", "bruno")]
    # (p-fp is being erased: nothing new lands for them)
    run = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id="p-h", thread_id="t-h"
    )
    for i in range(9):
        body = remember(api, run, text=f"Always check thing {i}.").json()
        approval = Approval.objects.get(pk=body["approval_id"])
        if i < 7:
            who = reviewers[i % 2 if i < 6 else 0]
            choice = ["approve", "verify", "reject"][i % 3]
            approval_decide(
                approval=approval,
                decision="reject" if choice == "reject" else "approve",
                verify=choice == "verify",
                reviewer=console_principal(who, world.tenant.id),
            )
        Approval.objects.filter(pk=approval.pk).update(created_at=now - timedelta(days=i))
        Revision.objects.filter(pk=approval.revision_id, review="pending").update(
            created_at=now - timedelta(days=i)
        )
    for day in (3, 9, 17):
        old = erasure_start(
            tenant_id=world.tenant.id,
            target_kind="participant",
            target_id=f"p-old-{day}",
            reason="asked",
            requested_by=f"staff:{world.user.pk}",
        )
        erasure_run(erasure_id=old.pk)
        ErasureRequest.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=day))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["reviewer", "officer", "superuser"])
def test_each_role_opens_the_console_on_its_own_front_page(live_server, page, api, world, role):
    # given a tenant with memories waiting, open and finished requests, a live worker
    _world_with_work(api, world)
    user = staff_create(world, "front", role)
    # when a staff member of the role signs in
    console_login(page, live_server.url, user.username, PASSWORD)
    page.wait_for_selector("#front-page")
    # then their page holds their panel and no other, and tables only for the admin
    panels = {
        "reviewer": "#review-queue-summary",
        "officer": "#privacy-summary",
        "superuser": "#health-summary",
    }
    assert page.locator(panels[role]).is_visible()
    if role == "reviewer":
        assert page.inner_text("#review-queue-summary .pending-count") == "4"
        assert page.locator("#privacy-summary, #health-summary, #all-tables").count() == 0
        assert "instruction-like" in page.inner_text("#review-reasons")
    if role == "officer":
        assert page.locator("#review-queue-summary, #health-summary, #all-tables").count() == 0
        assert page.locator("#privacy-open .open-erasure").count() == 1
        assert page.locator("#privacy-open .open-access").count() == 1
        assert page.locator("#privacy-finished li").count() == 4
        page.click("#start-erasure")
        page.wait_for_selector("#privacy-start")
        page.go_back()
        page.wait_for_selector("#front-page")
    if role == "superuser":
        assert "1 alive" in page.inner_text("#health-worker")
        assert page.locator("#all-tables").is_visible()
    # and the role's charts are drawn, with bars, and their words beside them
    charts = {
        "reviewer": ["chart-queue-age", "chart-written", "chart-reviewers"],
        "officer": ["chart-requests"],
        "superuser": ["chart-queue-age", "chart-written", "chart-reviewers", "chart-requests"],
    }[role]
    for chart in charts:
        svg = page.locator(f"#{chart} svg")
        box = svg.bounding_box()
        assert box is not None
        assert box["width"] > 200, chart
        assert box["height"] > 40, chart
        assert svg.locator("rect").count() > 0, chart
        assert svg.get_attribute("role") == "img"
        assert page.locator(f"#{chart} desc").text_content().endswith(")."), chart
        # the numbers' table is there for screen readers, in a box of one pixel
        hidden = page.locator(f"#{chart} .km-visually-hidden").bounding_box()
        assert hidden["width"] <= 1, chart
        assert hidden["height"] <= 1, chart
    assert page.locator(".km-chart").count() == len(charts)
    if role != "officer":
        reviewers = page.locator("#chart-reviewers table tbody th").all_inner_texts()
        assert reviewers == ["reviewer-ana", "reviewer-bruno"]
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    screenshot(page, f"front-page-{role}")
