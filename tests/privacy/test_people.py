"""The console's person page: everything about one person, in a bounded number of queries,
audited as a staff read, cut to what each role may see; and the search that finds people."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from console.tenant_wall import person_url
from privacy.services import Actor, access_request_start, erasure_start
from privacy.tasks import build_access_export
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.console.conftest import staff_create
from tests.privacy.conftest import plant_person

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _grow(api, world, pid: str, marker: str, size: int) -> None:
    """A person with `size` of everything: facts, messages, runs with entries, review
    records, audit events, access requests."""
    plant_person(world, pid, marker, facts=size, messages=size, entries=size, runs=size)
    declare(world.agent)
    run = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id=pid, thread_id=f"t-{marker}"
    )
    for i in range(size):
        remember(api, run, text=f"Always call {marker} by number {i}.", key=f"k{i}")
        api.get(f"/v1/facts?participant_id={pid}", **world.app.headers)
    for _ in range(size):
        access_request_start(
            actor=Actor.of_staff(world.user, world.tenant.id),
            subject_kind="participant",
            subject_id=pid,
        )


def test_the_person_page_shows_every_part_and_is_audited_as_a_staff_read(api, world):
    # given a person with data of every kind, and a privacy officer
    _grow(api, world, "p-page", "zqpage", 2)
    officer = staff_create(world, "page", "officer")
    client = _signed_in(officer)
    # when the officer opens the person's page
    page = client.get(person_url("participant", "p-page"))
    html = page.content.decode()
    # then every part is there
    assert page.status_code == 200
    for part in ("facts", "approvals", "conversations", "runs", "reads", "requests"):
        assert f'id="person-{part}"' in html, part
    assert "zqpage prefers coffee number 1" in html
    assert html.count('class="person-conversation"') == 1
    # and the opening is an audit event: a read by the staff member, about the person
    event = AuditEvent.objects.filter(kind="person").get()
    assert event.phase == "read"
    assert event.principal == f"staff:{officer.pk}"
    assert event.subjects == ["participant:p-page"]
    # so the person's access export lists it
    access = access_request_start(
        actor=Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id="p-page",
    )
    build_access_export(str(access.id), tenant_id=str(world.tenant.id))
    access.refresh_from_db()
    assert f"staff:{officer.pk}" in str(access.export_json)


@pytest.mark.parametrize("size", [1, 8])
def test_the_person_page_costs_the_same_queries_whatever_the_data(
    api, world, size, django_assert_max_num_queries
):
    # given a person with `size` of everything (1, then 8: more than a page of nothing but
    # bounded rows per part), and an officer
    _grow(api, world, "p-size", f"zqsize{size}", size)
    client = _signed_in(staff_create(world, f"size{size}", "officer"))
    url = person_url("participant", "p-size")
    # when the page is opened, then the number of queries is bounded by the same constant
    with django_assert_max_num_queries(40):
        page = client.get(url)
    assert page.status_code == 200
    assert page.content.decode().count('class="person-fact"') == size * 2 + 1


def test_the_page_query_count_does_not_grow_with_the_data(api, world, monkeypatch):
    # given pages of 3 rows, one person with 1 of everything and one with 6 times as much
    # (more than a page of each part)
    monkeypatch.setattr("privacy.people.PAGE", 3)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _grow(api, world, "p-small", "zqsmall", 1)
    _grow(api, world, "p-large", "zqlarge", 6)
    client = _signed_in(staff_create(world, "growth", "officer"))
    client.get(person_url("participant", "p-small"))  # warm the session and permission caches
    # when each page is opened
    counts = []
    for pid in ("p-small", "p-large"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(person_url("participant", pid)).status_code == 200
        counts.append(len(queries.captured_queries))
    large = client.get(person_url("participant", "p-large")).content.decode()
    assert large.count('class="person-fact"') == 3
    assert "The newest 3 of 13." in large
    # then the larger costs no more queries than the smaller (the names of who acted are
    # looked up per kind of principal shown, so a page may need one lookup fewer), and few
    assert counts[1] <= counts[0] <= 36, counts


def test_a_reviewer_sees_facts_and_review_records_only(api, world):
    # given a person with data, and a reviewer
    _grow(api, world, "p-rev", "zqrev", 1)
    reviewer = staff_create(world, "rev", "reviewer")
    # when the reviewer opens the person's page
    html = _signed_in(reviewer).get(person_url("participant", "p-rev")).content.decode()
    # then they see the facts and review records, not conversations, runs, reads or requests
    assert 'id="person-facts"' in html
    assert 'id="person-approvals"' in html
    for part in ("conversations", "runs", "reads", "requests", "actions"):
        assert f'id="person-{part}"' not in html, part


def test_staff_without_a_role_may_not_open_a_person_page(world):
    from kindmem.models import User

    clerk = User.objects.create_user(
        username="clerk", password="pw", tenant=world.tenant, is_staff=True
    )
    response = _signed_in(clerk).get(person_url("participant", "p-1"))
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(kind="person").exists()


def test_another_tenants_person_shows_nothing_of_them(api, world, other_world):
    # given a person in the other tenant, and an officer of this one
    plant_person(other_world, "p-there", "zqthere", facts=1, messages=1, entries=1)
    client = _signed_in(staff_create(world, "wall", "officer"))
    # when the officer opens that id here, and names the other tenant
    here = client.get(person_url("participant", "p-there"))
    there = client.get(person_url("participant", "p-there", other_world.tenant.id))
    # then the page has nothing of theirs, and naming their tenant is a 404
    assert here.status_code == 200
    assert "zqthere" not in here.content.decode()
    assert there.status_code == 404


def test_the_search_finds_people_by_id_and_by_words_of_a_memory(api, world):
    # given two people, and a user with a username
    plant_person(world, "p-anna", "zqanna", facts=1, messages=0, entries=0)
    plant_person(world, "p-bert", "zqbert", facts=1, messages=0, entries=0)
    client = _signed_in(staff_create(world, "find", "officer"))
    search = reverse("admin:privacy_person")
    # when the officer searches by id, by words and by username
    by_id = client.get(search, {"q": "p-anna"}).content.decode()
    by_words = client.get(search, {"q": "zqbert coffee"}).content.decode()
    by_name = client.get(search, {"q": world.user.username}).content.decode()
    nobody = client.get(search, {"q": "zqnobody"}).content.decode()
    # then each finds its person, with a link to their page
    assert person_url("participant", "p-anna", world.tenant.id).replace("&", "&amp;") in by_id
    assert person_url("participant", "p-bert", world.tenant.id).replace("&", "&amp;") in by_words
    assert "p-anna" not in by_words
    assert str(world.user.id) in by_name
    assert 'id="person-no-hits"' in nobody


def test_the_page_of_a_person_under_erasure_says_so(world):
    plant_person(world, "p-going", "zqgoing", facts=1, messages=0, entries=0)
    erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-going",
        reason="asked",
        requested_by="test",
    )
    html = (
        _signed_in(staff_create(world, "going", "officer"))
        .get(person_url("participant", "p-going"))
        .content.decode()
    )
    assert 'id="person-erasure-underway"' in html


def test_a_page_about_no_one_is_not_audited(world):
    client = _signed_in(staff_create(world, "nobody", "officer"))
    page = client.get(person_url("participant", "p-typo")).content.decode()
    assert 'id="person-facts"' in page
    assert not AuditEvent.objects.filter(kind="person").exists()


def test_the_erase_and_export_buttons_fill_in_the_start_forms(api, world):
    plant_person(world, "p-btn", "zqbtn", facts=1, messages=0, entries=0)
    client = _signed_in(staff_create(world, "btn", "officer"))
    page = client.get(person_url("participant", "p-btn")).content.decode()
    erase = re.search(r'href="([^"]*erasurerequest/start/[^"]*)"', page).group(1)
    export = re.search(r'href="([^"]*accessrequest/start/[^"]*)"', page).group(1)
    erase_form = client.get(erase.replace("&amp;", "&")).content.decode()
    export_form = client.get(export.replace("&amp;", "&")).content.decode()
    assert 'value="p-btn"' in erase_form
    assert 'value="p-btn"' in export_form


def test_an_officer_follows_a_fact_from_the_person_page_and_that_read_is_audited(api, world):
    # given a person with facts, and a privacy officer judging them before an erasure
    _grow(api, world, "p-judge", "zqjudge", 1)
    client = _signed_in(staff_create(world, "judge", "officer"))
    html = client.get(person_url("participant", "p-judge")).content.decode()
    # then each fact on the person page is a link to its page (privacy/0003)
    links = re.findall(r'href="(/console/facts/fact/[0-9a-f-]{36}/change/)"', html)
    assert links
    # and the officer may open it, read only, and the opening is in the person's audit trail
    page = client.get(links[0])
    assert page.status_code == 200
    assert "zqjudge" in page.content.decode()
    event = AuditEvent.objects.filter(kind="fact", endpoint="GET console fact").get()
    assert event.subjects == ["participant:p-judge"]
    assert 'name="_save"' not in page.content.decode()
