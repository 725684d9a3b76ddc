"""Every console page costs the same queries whatever the size of the tenant: the same pages
with a tenant of N of everything and of 3N (an N+1 shows as a difference). bench/console_pages.py
times the same pages at 100,000 facts; this holds the shape of their work."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals.models import Approval, ApprovalStatus
from approvals.services import approval_decide, console_principal
from facts.models import Fact
from privacy.models import AccessRequest, ErasureRequest
from privacy.services import Actor, access_request_start, erasure_start
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.console.conftest import staff_create
from tests.privacy.conftest import plant_person

pytestmark = pytest.mark.django_db

N = 3


def _grow(api, world, reviewer, start: int, n: int) -> None:
    """n more people with facts, messages, runs and log entries; n more memories waiting and n
    decided; n audit events; n access requests and erasures. Person p-0 gains as well."""
    declare(world.agent)
    for i in range(start, start + n):
        for pid in (f"p-{i}", "p-0"):
            plant_person(world, pid, f"m{i}{pid}", facts=2, messages=2, entries=1)
        run = factories.run_create(
            world.app, world.project, agent=world.agent, participant_id="p-0", thread_id=f"t{i}"
        )
        waiting = remember(api, run, text=f"Always greet {i}.", key=f"w{i}").json()
        decided = remember(api, run, text=f"Never call {i}.", key=f"d{i}").json()
        assert waiting["approval_id"], waiting
        approval_decide(
            approval=Approval.objects.get(pk=decided["approval_id"]),
            decision="reject",
            reviewer=console_principal(reviewer, world.tenant.id),
        )
        api.get("/v1/facts?participant_id=p-0", **world.app.headers)
        access_request_start(
            actor=Actor.of_staff(world.user, world.tenant.id),
            subject_kind="participant",
            subject_id=f"p-{i}",
        )
        erasure_start(
            tenant_id=world.tenant.id,
            target_kind="participant",
            target_id=f"gone-{i}",
            reason="asked",
            requested_by=f"staff:{world.user.pk}",
        )


def _pages(world) -> list[tuple[str, str]]:
    fact = Fact.objects.filter(tenant=world.tenant, participant_id="p-0").order_by("pk").first()
    waiting = Approval.objects.filter(tenant=world.tenant, status=ApprovalStatus.PENDING).first()
    access = AccessRequest.objects.filter(tenant=world.tenant).order_by("created_at").first()
    erasure = ErasureRequest.objects.filter(tenant=world.tenant).order_by("created_at").first()
    person = reverse("admin:privacy_person")
    return [
        ("reviewer", reverse("admin:index")),
        ("officer", reverse("admin:index")),
        ("superuser", reverse("admin:index")),
        ("reviewer", reverse("admin:approvals_approval_changelist")),
        ("reviewer", reverse("admin:approvals_approval_changelist") + "?status=all"),
        ("reviewer", reverse("admin:approvals_approval_change", args=[waiting.pk])),
        ("reviewer", reverse("admin:facts_fact_changelist")),
        ("reviewer", reverse("admin:facts_fact_change", args=[fact.pk])),
        ("superuser", reverse("admin:facts_revision_changelist")),
        ("superuser", reverse("admin:facts_subject_changelist")),
        ("superuser", reverse("admin:recall_message_changelist")),
        ("superuser", reverse("admin:audit_auditevent_changelist")),
        ("officer", f"{person}?subject=participant:p-0"),
        ("officer", f"{person}?q=p-0"),
        ("officer", reverse("admin:privacy_accessrequest_changelist")),
        ("officer", reverse("admin:privacy_accessrequest_change", args=[access.pk])),
        ("officer", reverse("admin:privacy_erasurerequest_changelist")),
        ("officer", reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])),
    ]


def _costs(clients: dict[str, Client], pages: list[tuple[str, str]]) -> dict[str, int]:
    costs = {}
    for role, url in pages:
        client = clients[role]
        assert client.get(url).status_code == 200, url  # warm the session and permission caches
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200, url
        costs[f"{role} {url}"] = len(captured)
    return costs


def test_every_console_page_costs_the_same_queries_for_n_and_3n_of_everything(
    api, world, monkeypatch
):
    # the health panel's broker probe is not a query, and no broker runs here
    monkeypatch.setattr("api.broker.broker_check", lambda: {"ok": True, "transport": "test"})
    staff = {role: staff_create(world, "cost", role) for role in ("reviewer", "officer")}
    staff["superuser"] = staff_create(world, "cost", "superuser")
    clients = {}
    for role, user in staff.items():
        clients[role] = Client()
        clients[role].force_login(user)
    # given a tenant of N of everything
    _grow(api, world, staff["reviewer"], 0, N)
    pages = _pages(world)  # the same fact, approval and requests before and after
    small = _costs(clients, pages)
    # when it grows to 3N
    _grow(api, world, staff["reviewer"], N, 2 * N)
    large = _costs(clients, pages)
    # then no page costs a query more
    assert large == small
    assert len(small) == len(pages)


def test_a_list_longer_than_the_count_cap_says_more_than_and_still_pages(api, world, monkeypatch):
    from console.lists import CappedCountPaginator

    # given a count cap of 3 and five facts
    monkeypatch.setattr(CappedCountPaginator, "cap", 3)
    for i in range(5):
        plant_person(world, f"p-{i}", f"cap{i}", facts=0, messages=0, entries=0, runs=0)
    client = Client()
    client.force_login(staff_create(world, "cap", "superuser"))
    # when the facts list is opened, and searched for one
    page = client.get(reverse("admin:facts_fact_changelist")).content.decode()
    one = client.get(reverse("admin:facts_fact_changelist"), {"q": "p-0"}).content.decode()
    # then it says "more than 3", never counting on, and lists its rows; a search narrows it
    assert "more than 3 facts" in page
    assert "(N total)" not in page
    rows = re.findall(r'href="/console/facts/fact/[0-9a-f-]+/change/', page)
    assert len(set(rows)) == 5  # fewer than a page: all of them
    assert "1 result" in one
    assert "more than" not in one


def test_the_audit_lists_filters_offer_the_kinds_of_its_recent_events(api, world):
    # given reads of facts by an app (kind "fact", principal kind "app")
    api.get("/v1/facts", **world.app.headers)
    client = Client()
    client.force_login(staff_create(world, "aud", "superuser"))
    page = client.get(reverse("admin:audit_auditevent_changelist")).content.decode()
    assert "?kind=fact" in page
    assert "?principal_kind=app" in page
    # and a value chosen stays offered
    chosen = client.get(reverse("admin:audit_auditevent_changelist"), {"kind": "message"})
    assert "?kind=message" in chosen.content.decode()
