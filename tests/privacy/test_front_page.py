"""The console's front page per role: each role's panel, and no table a role never needs."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from kindmem.models import WorkerHeartbeat
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
    assert "under an hour: 3" in page
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
    from django.utils import timezone

    WorkerHeartbeat.objects.create(hostname="w1", seen_at=timezone.now())
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
