"""The console's front page per role: each role's panel, and no table a role never needs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from privacy.services import Actor, access_request_start, erasure_start
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.console.conftest import staff_create

pytestmark = pytest.mark.django_db

INDEX = "admin:index"


def _page(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse(INDEX))
    assert response.status_code == 200
    return response.content.decode()


def _chart_rows(page: str, chart_id: str) -> dict[str, list[str]]:
    """A chart's numbers, from the table beside its SVG: {category: [value per series, total]}."""
    figure = re.search(rf'<figure class="km-chart" id="{chart_id}">(.*?)</figure>', page, re.S)
    assert figure, f"no chart {chart_id}"
    rows = re.findall(r'<tr><th scope="row">(.*?)</th>(.*?)</tr>', figure.group(1))
    return {label: re.findall(r"<td>(.*?)</td>", cells) for label, cells in rows}


def _chart_columns(page: str, chart_id: str) -> list[str]:
    figure = re.search(rf'<figure class="km-chart" id="{chart_id}">(.*?)</figure>', page, re.S)
    return re.findall(r'<th scope="col">(.*?)</th>', figure.group(1))


def _queue(api, world, n: int) -> None:
    declare(world.agent)
    run = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id="p-q", thread_id="t-q"
    )
    for i in range(n):
        remember(api, run, text=f"Always greet them with number {i}.", key=f"k{i}")


def test_a_reviewer_sees_the_queue_by_reason_and_age_and_no_tables(api, world):
    # given three memories waiting, and a reviewer
    _queue(api, world, 3)
    page = _page(staff_create(world, "fp", "reviewer"))
    # then the queue is on their page, with its reasons and ages, and nothing else
    assert '<strong class="pending-count">3</strong>' in page
    assert '<strong data-reason="instruction-like">3</strong>' in page
    assert _chart_rows(page, "chart-queue-age")["under an hour"] == ["3"]
    assert _chart_rows(page, "chart-queue-age")["over a week"] == ["0"]
    assert 'id="review-decisions"' not in page  # none yet
    assert 'id="privacy-summary"' not in page
    assert 'id="health-summary"' not in page
    assert 'id="all-tables"' not in page
    assert 'class="app-' not in page  # Django's list of tables


def test_a_privacy_officer_sees_open_requests_and_the_start_buttons(api, world):
    # given an erasure and an access request still open, and a privacy officer
    erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-open",
        reason="asked",
        requested_by=f"staff:{world.user.pk}",
    )
    access_request_start(
        actor=Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id="p-open",
    )
    page = _page(staff_create(world, "fp", "officer"))
    # then both are listed with who asked (by name), and the buttons are there
    assert page.count('class="open-erasure"') == 1
    assert page.count('class="open-access"') == 1
    assert f"asked by {world.user.username}" in page
    assert reverse("admin:privacy_erasurerequest_start") in page
    assert reverse("admin:privacy_accessrequest_start") in page
    assert 'id="review-queue-summary"' not in page
    assert 'id="health-summary"' not in page
    assert 'id="all-tables"' not in page
    assert 'class="app-' not in page


def test_an_admin_sees_the_health_and_every_table(api, world):
    # given a worker that beat a minute ago, and a tenant superuser
    factories.heartbeat_create()
    page = _page(staff_create(world, "fp", "superuser"))
    # then the health panel says the worker is alive, and the tables are listed
    assert "1 alive" in page
    assert 'id="health-embedding"' in page
    assert 'id="health-broker"' in page
    assert 'id="all-tables"' in page
    assert 'class="app-facts' in page
    assert 'id="review-queue-summary"' in page
    assert 'id="privacy-summary"' in page


@pytest.mark.parametrize("waiting", [2, 12])
def test_the_front_page_costs_the_same_queries_whatever_the_queue(
    api, world, waiting, django_assert_max_num_queries
):
    _queue(api, world, waiting)
    user = staff_create(world, f"fpq{waiting}", "superuser")
    client = Client()
    client.force_login(user)
    with django_assert_max_num_queries(25):
        assert client.get(reverse(INDEX)).status_code == 200


def _today(page: str, chart_id: str) -> dict[str, str]:
    columns = _chart_columns(page, chart_id)
    [last] = [v for k, v in _chart_rows(page, chart_id).items() if k == _label(timezone.now())]
    return dict(zip(columns[1:], last, strict=True))


def _label(moment) -> str:
    day = timezone.localdate(moment)
    return f"{day.day} {day.strftime('%b')}"


def test_the_reviewer_sees_revisions_written_per_day_by_trust_and_review(api, world, other_world):
    # given, today: an app's fact (asserted), four memories an agent remembered of which one
    # is approved, one approved and verified, one rejected and one still waiting; and a fact
    # written 40 days ago, outside the chart
    from facts.models import Revision
    from facts.services import fact_create

    def note(tenant_world, text):
        scope = {"project_id": str(tenant_world.project.id)}
        return fact_create(
            principal=tenant_world.app.principal, type="note", content={"text": text}, scope=scope
        ).revision

    note(world, "An app's note.")
    run = factories.run_create(world.app, world.project, agent=declare(world.agent))
    reviewer = staff_create(world, "fpw", "reviewer")
    key = factories.user_key_create(reviewer)
    ids = [
        remember(api, run, text=f"Always do thing {i}.", key=f"k{i}").json()["approval_id"]
        for i in range(4)
    ]
    for approval_id, decision in zip(ids, ("approve", "verify", "reject"), strict=False):
        answer = api.post(
            f"/v1/approvals/{approval_id}/{decision}", {}, format="json", **key.headers
        )
        assert answer.status_code == 200, answer.json()
    old = note(world, "Old.")
    Revision.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    # and another tenant's fact, which is not theirs to count
    note(other_world, "Theirs.")
    # when the reviewer opens the console
    page = _page(reviewer)
    # then today's column counts each revision under its outcome: the verify wrote a second,
    # verified revision beside the approved one it replaced
    assert _today(page, "chart-written") == {
        "asserted": "1",
        "verified": "1",
        "unverified (accepted)": "2",
        "waiting for review": "1",
        "rejected": "1",
        "replaced before review": "0",
        "total": "6",
    }
    # thirty days, and the older fact is outside them
    rows = _chart_rows(page, "chart-written")
    assert len(rows) == 30
    assert sum(int(v[-1]) for v in rows.values()) == 6
    assert "6 revisions in all" in page
    # and the decisions per reviewer name the reviewer, by decision
    assert _chart_rows(page, "chart-reviewers") == {reviewer.username: ["1", "1", "1", "3"]}


def test_the_officer_sees_erasures_and_access_requests_per_day(api, world, other_world):
    for i in range(2):
        erasure_start(
            tenant_id=world.tenant.id,
            target_kind="participant",
            target_id=f"p-{i}",
            reason="asked",
            requested_by=f"staff:{world.user.pk}",
        )
    access_request_start(
        actor=Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id="p-0",
    )
    # and one of another tenant's
    erasure_start(
        tenant_id=other_world.tenant.id,
        target_kind="participant",
        target_id="p-9",
        reason="asked",
        requested_by="test",
    )
    page = _page(staff_create(world, "fpr", "officer"))
    assert _today(page, "chart-requests") == {
        "erasures": "2",
        "access requests": "1",
        "total": "3",
    }
    assert "3 requests in all; erasures 2, access requests 1" in page
    # the officer is no reviewer: no review charts
    assert 'id="chart-written"' not in page
