from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import AuditNote, audit_purge, audit_record, audit_subject_scrub
from kindmem.subjects import Subject
from tests import factories


def record(principal, *, phase="read", subjects=(), ids=(), snapshot=None, outcome="success"):
    note = AuditNote(phase=phase, kind="fact", query_snapshot=snapshot or {})
    note.touch(ids=ids, subjects=subjects)
    return audit_record(principal=principal, note=note, outcome=outcome, endpoint="GET facts")


def test_events_page_by_seq_oldest_first_for_tenant_admins(api, world):
    # given five events
    seqs = [record(world.app.principal, ids=[f"f{i}"]).seq for i in range(5)]
    # when an admin pages two at a time
    first = api.get("/v1/audit", {"limit": 2}, **world.admin.headers).json()
    second = api.get(
        "/v1/audit", {"limit": 2, "since_seq": first["next_since_seq"]}, **world.admin.headers
    ).json()
    rest = api.get(
        "/v1/audit", {"since_seq": second["next_since_seq"]}, **world.admin.headers
    ).json()
    # then the pages are consecutive, without gaps or repeats
    paged = [e["seq"] for page in (first, second, rest) for e in page["events"]]
    assert paged == seqs
    assert first["events"][0]["principal"] == world.app.principal.id


def test_only_tenant_admins_read_the_audit_stream(api, world):
    for keyed in (world.app, world.user_key):
        response = api.get("/v1/audit", **keyed.headers)
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"


def test_a_tenant_admin_never_sees_another_tenants_events(api, world, other_world):
    record(other_world.app.principal, subjects=[("participant", "p-1")])
    mine = record(world.app.principal, subjects=[("participant", "p-1")])
    events = api.get("/v1/audit", **world.admin.headers).json()["events"]
    assert [e["seq"] for e in events] == [mine.seq]
    by_subject = api.get("/v1/audit", {"subject": "participant:p-1"}, **world.admin.headers).json()[
        "events"
    ]
    assert [e["seq"] for e in by_subject] == [mine.seq]


def test_filters_by_subject_phase_outcome_fact_and_principal(api, world):
    about = record(world.app.principal, subjects=[("participant", "ann")], ids=["fact-a"])
    record(world.app.principal, subjects=[("participant", "bob")], phase="write")
    failed = record(world.user_key.principal, outcome="failure", phase="delete")

    def seqs(**params):
        response = api.get("/v1/audit", params, **world.admin.headers)
        assert response.status_code == 200, response.json()
        return [e["seq"] for e in response.json()["events"]]

    assert seqs(subject="participant:ann") == [about.seq]
    assert seqs(phase="delete") == [failed.seq]
    assert seqs(outcome="failure") == [failed.seq]
    assert seqs(principal=world.user_key.principal.id) == [failed.seq]
    assert seqs(kind="message") == []


def test_bad_filters_are_validation_errors(api, world):
    response = api.get("/v1/audit", {"phase": "peek", "limit": 0}, **world.admin.headers)
    assert response.status_code == 400
    assert set(response.json()["details"]) == {"phase", "limit"}


def test_query_text_is_kept_only_when_the_tenant_allows_it(world):
    snapshot = {"mode": "keyword", "query": "ann's allergies", "top_k": 5}
    assert "query" not in record(world.app.principal, snapshot=snapshot).query_snapshot
    factories.audit_policy_create(world.tenant, record_query_text=True)
    kept = record(world.app.principal, snapshot=snapshot)
    assert kept.query_snapshot["query"] == "ann's allergies"


def test_scrubbing_a_subject_keeps_that_the_access_happened(world):
    factories.audit_policy_create(world.tenant, record_query_text=True)
    event = record(
        world.app.principal,
        subjects=[("participant", "ann"), ("participant", "bob")],
        snapshot={"query": "ann", "mode": "keyword"},
    )
    changed = audit_subject_scrub(
        tenant_id=world.tenant.id, subject=Subject.parse("participant", "ann")
    )
    event.refresh_from_db()
    assert changed == 1
    assert event.subjects == ["participant:bob"]
    assert event.query_snapshot == {"mode": "keyword"}
    assert AuditEvent.objects.about_subject("participant:ann").count() == 0


def test_purge_deletes_only_events_past_their_tenants_retention(world, other_world):
    factories.audit_policy_create(world.tenant, retention_days=7)
    old = record(world.app.principal)
    old_other = record(other_world.app.principal)
    fresh = record(world.app.principal)
    AuditEvent.objects.filter(seq__in=[old.seq, old_other.seq]).update(
        timestamp=timezone.now() - timedelta(days=30)
    )
    assert audit_purge() == 1
    assert set(AuditEvent.objects.values_list("seq", flat=True)) == {old_other.seq, fresh.seq}


@pytest.mark.django_db(transaction=True)
def test_cursor_paging_has_no_gaps_or_repeats_under_concurrent_writers(world):
    # given writers whose transactions stay open a random while after they record
    principal = world.app.principal
    writers, per_writer = 6, 8
    done = threading.Event()
    seen: list[int] = []

    def write() -> None:
        try:
            for _ in range(per_writer):
                with transaction.atomic():
                    record(principal)
                    time.sleep(random.uniform(0, 0.02))
        finally:
            connection.close()

    def read() -> None:
        cursor = 0
        try:
            while True:
                finished = done.is_set()
                page = list(
                    AuditEvent.objects.of_tenant(world.tenant.id)
                    .filter(seq__gt=cursor)
                    .order_by("seq")
                    .values_list("seq", flat=True)[:5]
                )
                seen.extend(page)
                cursor = page[-1] if page else cursor
                if finished and not page:
                    return
                time.sleep(0.002)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(writers)]
    reader = threading.Thread(target=read)
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    # then the reader saw every event exactly once
    assert sorted(seen) == seen
    assert len(seen) == len(set(seen)) == writers * per_writer
