"""Console reads are audited (audit/console.py): a staff member opening a fact's page is a read
of the people it is about, so each of them finds it in the "who read my data" part of their
subject access export. (The person page and the export download: tests/privacy.)"""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from privacy.services import Actor, access_request_start
from privacy.tasks import build_access_export
from tests.console.conftest import fact_history_plant, staff_create

pytestmark = pytest.mark.django_db


def export_of(world: object, participant: str) -> dict:
    access = access_request_start(
        actor=Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id=participant,
    )
    build_access_export(str(access.id), tenant_id=str(world.tenant.id))
    access.refresh_from_db()
    return access.export_json


def test_a_staff_members_fact_page_view_is_in_the_persons_access_export(api, world):
    # given a fact about participant p-ada (its scope), a note about her (its subject only),
    # and a reviewer
    history = fact_history_plant(api, world, changes=1, links=1)
    [note] = history.linked
    reviewer = staff_create(world, "audit", "reviewer")
    client = Client()
    client.force_login(reviewer)
    # when the reviewer opens both facts' pages
    for fact_id in (history.fact_id, note):
        assert client.get(reverse("admin:facts_fact_change", args=[fact_id])).status_code == 200
    # then each opening is a read by the reviewer, of the fact, about her
    events = AuditEvent.objects.filter(kind="fact", principal=f"staff:{reviewer.pk}")
    assert events.count() == 2
    for event in events:
        assert event.phase == "read"
        assert event.outcome == "success"
        assert event.principal_kind == "console"
        assert event.endpoint == "GET console fact"
        assert event.subjects == ["participant:p-ada"]
        assert event.tenant_id == world.tenant.id
    # and her access export lists both among who read her data, naming the facts read
    accesses = [
        a for a in export_of(world, "p-ada")["accesses"] if a["principal"] == f"staff:{reviewer.pk}"
    ]
    assert [(a["phase"], a["kind"], a["endpoint"]) for a in accesses] == [
        ("read", "fact", "GET console fact"),
        ("read", "fact", "GET console fact"),
    ]
    assert history.fact_id in accesses[0]["object_ids"]
    assert note in accesses[1]["object_ids"]


def test_a_fact_page_that_is_not_shown_reads_nothing_and_records_nothing(api, world, other_world):
    # given a fact of another tenant
    theirs = fact_history_plant(api, other_world, changes=1, participant="p-theirs")
    client = Client()
    client.force_login(staff_create(world, "audit", "superuser"))
    # when staff of this tenant ask for it, or for an id that names nothing
    for fact_id in (theirs.fact_id, uuid.uuid4()):
        assert client.get(reverse("admin:facts_fact_change", args=[fact_id])).status_code == 404
    # then no read of anyone is on record
    assert not AuditEvent.objects.filter(principal_kind="console").exists()


def test_reading_a_runs_log_is_in_the_persons_access_export_and_names_who_it_is_for(api, world):
    # given a run for participant p-ada, with a log, and a superuser of the tenant
    history = fact_history_plant(api, world, changes=1)
    staff = staff_create(world, "audit", "superuser")
    client = Client()
    client.force_login(staff)
    # when they open the run's log
    timeline = reverse("admin:runlog_logentry_timeline", args=[history.run.pk])
    html = client.get(timeline).content.decode()
    # then the run is named by its agent, the person and project by name, linked
    summary = html.split('id="run-summary"')[1].split("</p>")[0]
    assert "Support Bot" in summary
    assert ">p-ada<" in summary
    assert f">{world.project.name}<" in summary
    # and the reading is on record, in her export
    [event] = AuditEvent.objects.filter(kind="log", principal=f"staff:{staff.pk}")
    assert event.subjects == ["participant:p-ada"]
    assert event.endpoint == "GET console run-log"
    accesses = export_of(world, "p-ada")["accesses"]
    assert [a["endpoint"] for a in accesses if a["principal"] == f"staff:{staff.pk}"] == [
        "GET console run-log"
    ]
    # and an entry's own page is its place in the timeline
    entry = history.entries[1]
    answer = client.get(reverse("admin:runlog_logentry_change", args=[entry.pk]))
    assert answer["Location"] == f"{timeline}#entry-{entry.sequence}"
