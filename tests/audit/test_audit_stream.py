from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import AuditNote, audit_purge, audit_record, audit_subject_scrub
from kindmem.row_security import tenant_context
from kindmem.subjects import Subject
from tests import factories


def record(
    principal,
    *,
    phase="read",
    subjects=(),
    ids=(),
    snapshot=None,
    outcome="success",
    targets=(),
    error="",
):
    note = AuditNote(phase=phase, kind="fact", query_snapshot=snapshot or {})
    note.touch(ids=ids, subjects=subjects, targets=targets)
    return audit_record(
        principal=principal, note=note, outcome=outcome, endpoint="GET facts", error=error
    )


def seqs_of(api, world, **params):
    response = api.get("/v1/audit", params, **world.admin.headers)
    assert response.status_code == 200, response.json()
    return [e["seq"] for e in response.json()["events"]]


def test_events_page_by_seq_oldest_first_for_tenant_admins(api, world):
    # given five events
    seqs = [record(world.app.principal, ids=[f"f{i}"]).seq for i in range(5)]
    # when an admin pages two at a time, from the first
    first = api.get("/v1/audit", {"limit": 2, "since_seq": 0}, **world.admin.headers).json()
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


def test_a_limit_without_a_cursor_gives_the_most_recent_events_oldest_first(api, world):
    # given five events
    seqs = [record(world.app.principal, ids=[f"f{i}"]).seq for i in range(5)]
    # when an admin asks for two, with no cursor
    tail = api.get("/v1/audit", {"limit": 2}, **world.admin.headers).json()
    # then the two newest come, oldest first, and the cursor after them
    assert [e["seq"] for e in tail["events"]] == seqs[-2:]
    assert tail["next_since_seq"] == seqs[-1]
    # and paging on from that cursor gives only what was recorded after
    later = record(world.app.principal).seq
    after = api.get(
        "/v1/audit", {"limit": 2, "since_seq": tail["next_since_seq"]}, **world.admin.headers
    ).json()
    assert [e["seq"] for e in after["events"]] == [later]


def test_the_most_recent_events_are_those_matching_the_filters(api, world):
    # given a failure among newer successes
    failed = record(world.app.principal, outcome="failure").seq
    for _ in range(3):
        record(world.app.principal)
    # when the newest failure is asked for, then it is the one (not the newest event)
    assert seqs_of(api, world, outcome="failure", limit=1) == [failed]


def test_unknown_query_parameters_are_refused_by_name(api, world):
    # given an event, so that an ignored parameter would answer it
    record(world.app.principal, targets=[("note", {"participant_id": "ann"})])
    # when the seed's spelling of a criterion is sent
    response = api.get(
        "/v1/audit", {"scope": "participant:ann", "sinceSeq": 1}, **world.admin.headers
    )
    # then it is refused, naming each one
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert set(response.json()["details"]) == {"scope", "sinceSeq"}


def test_type_and_scope_filters_find_the_events_that_touched_them(api, world):
    # given events that touched facts of several types and scopes
    p = str(world.project.id)
    ann_pref = ("preference", {"project_id": p, "participant_id": "ann"})
    bob_note = ("note", {"project_id": p, "participant_id": "bob", "thread_id": "t-1"})
    only_ann = record(world.app.principal, targets=[ann_pref]).seq
    both = record(world.app.principal, targets=[ann_pref, bob_note]).seq
    mine = record(world.app.principal, targets=[("note", {"user_id": str(world.user.id)})]).seq
    record(world.app.principal)  # touched no fact (a message, a log)
    # when filtered by scope keys, as GET /v1/facts narrows; then every given key must match
    assert seqs_of(api, world, participant_id="ann") == [only_ann, both]
    assert seqs_of(api, world, thread_id="t-1") == [both]
    assert seqs_of(api, world, participant_id="ann", thread_id="t-1") == []
    assert seqs_of(api, world, user_id=str(world.user.id)) == [mine]
    # by type (the seed's kind)
    assert seqs_of(api, world, type="note") == [both, mine]
    # and a type with a scope is one target: no event touched bob's preferences
    assert seqs_of(api, world, type="preference", participant_id="bob") == []
    assert seqs_of(api, world, type="note", participant_id="bob", project_id=p) == [both]


def test_a_project_alone_is_the_events_project_or_a_touched_facts(api, world):
    # given an event whose column names the project, and one that touched a fact in it
    p = str(world.project.id)
    note = AuditNote(phase="read", kind="message", project_id=world.project.id)
    by_column = audit_record(
        principal=world.app.principal, note=note, outcome="success", endpoint="GET messages"
    ).seq
    by_target = record(world.app.principal, targets=[("note", {"project_id": p})]).seq
    record(world.app.principal, targets=[("note", {"user_id": str(world.user.id)})])
    # then a project_id filter finds both
    assert seqs_of(api, world, project_id=p) == [by_column, by_target]


def test_events_render_their_error_and_targets(api, world):
    record(
        world.app.principal,
        outcome="failure",
        error="An erasure for this person is in progress.",
        targets=[("note", {"participant_id": "ann", "project_id": str(world.project.id)})],
    )
    [event] = api.get("/v1/audit", **world.admin.headers).json()["events"]
    assert event["error"] == "An erasure for this person is in progress."
    assert event["targets"] == [
        {"type": "note", "scope": {"participant_id": "ann", "project_id": str(world.project.id)}}
    ]


def test_a_page_costs_the_same_queries_for_two_events_and_for_twenty(api, world):
    def statements(count: int) -> int:
        AuditEvent.objects.all().delete()
        for i in range(count):
            record(world.app.principal, ids=[f"f{i}"], targets=[("note", {"thread_id": f"t{i}"})])
        with CaptureQueriesContext(connection) as captured:
            response = api.get("/v1/audit", {"type": "note"}, **world.admin.headers)
        assert len(response.json()["events"]) == count
        return len(captured)

    statements(1)  # the credential's first use reads what later requests find cached
    assert statements(2) == statements(20)


def test_type_and_scope_filters_keep_their_index_behind_the_wall(world):
    # given the app role confined to the tenant, and scans made as costly as the planner allows
    query = AuditEvent.objects.targeting(type="note", scope={"participant_id": "ann"})
    sql, params = query.values("seq").query.sql_with_params()
    with tenant_context(world.tenant.id), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    # then the planner uses the GIN index (jsonb @> marked LEAKPROOF by the migration)
    assert "audit_targets" in plan, plan


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


def test_scrubbing_a_subject_takes_their_id_off_targets_and_errors(world):
    # given an event whose target scope and error text name ann
    event = record(
        world.app.principal,
        outcome="failure",
        error="No such participant: ann.",
        targets=[("note", {"participant_id": "ann", "thread_id": "t-1"})],
    )
    # when ann is scrubbed
    audit_subject_scrub(tenant_id=world.tenant.id, subject=Subject.parse("participant", "ann"))
    # then the event keeps its shape, without her id
    event.refresh_from_db()
    assert event.targets == [
        {"type": "note", "scope": {"participant_id": "erased", "thread_id": "t-1"}}
    ]
    assert event.error == "erased"


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
