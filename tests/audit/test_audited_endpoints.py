"""Every memory endpoint leaves exactly one audit event per call: success or failure."""

from __future__ import annotations

import importlib
import uuid
from typing import Any

import pytest
from django.db import connection

from audit.models import AuditEvent
from audit.services import AuditNote, audit_record
from facts.models import Revision
from tests import factories
from tests.approvals.conftest import declare, remember, reviewer_create

pytestmark = pytest.mark.django_db


def fact_create(api: Any, keyed: Any, participant: str = "p-1", **body: Any) -> Any:
    payload = {
        "type": "preference",
        "content": {"text": "likes green tea"},
        "scope": {"project_id": str(keyed.key.projects.first().id), "participant_id": participant},
        **body,
    }
    return api.post("/v1/facts", payload, format="json", **keyed.headers)


def only_event(**filters: Any) -> AuditEvent:
    events = list(AuditEvent.objects.filter(**filters))
    assert len(events) == 1, [(e.endpoint, e.phase, e.outcome) for e in AuditEvent.objects.all()]
    return events[0]


def test_a_fact_write_records_who_wrote_what_about_whom(api, world):
    response = fact_create(api, world.app)
    assert response.status_code == 201
    fact_id = response.json()["fact"]["id"]
    event = only_event()
    assert (event.phase, event.outcome, event.kind) == ("write", "success", "fact")
    assert event.principal == world.app.principal.id
    assert event.object_ids == [fact_id]
    assert event.subjects == ["participant:p-1"]
    assert event.project_id == world.project.id


def test_events_name_the_type_and_scope_of_the_facts_they_touched(api, world, settings):
    # given two facts of one project, about two people
    settings.EMBEDDER = "hashing"
    p1 = fact_create(api, world.app).json()["fact"]
    fact_create(api, world.app, participant="p-2", type="note", content={"text": "tea"})
    # when the app lists them, and searches for one
    assert api.get("/v1/facts", **world.app.headers).status_code == 200
    found = api.post(
        "/v1/facts/search",
        {"query": "green", "mode": "keyword", "type": "preference"},
        format="json",
        **world.app.headers,
    )
    assert found.status_code == 200, found.json()
    # then each event names the (type, scope) of every fact it touched, once
    write, _, listed, searched = AuditEvent.objects.order_by("seq")
    p1_target = {"type": "preference", "scope": p1["scope"]}
    p2_scope = {**p1["scope"], "participant_id": "p-2"}
    assert write.targets == [p1_target]
    assert sorted(listed.targets, key=str) == sorted(
        [p1_target, {"type": "note", "scope": p2_scope}], key=str
    )
    assert searched.targets == [p1_target]


def test_a_search_that_finds_nothing_records_the_type_and_scope_it_asked_for(api, world):
    response = api.post(
        "/v1/facts/search",
        {"query": "zz", "mode": "keyword", "type": "note", "scope": {"participant_id": "p-9"}},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 200
    assert only_event().targets == [{"type": "note", "scope": {"participant_id": "p-9"}}]


def test_a_refused_write_records_its_message_and_the_type_and_scope_it_asked_for(api, world):
    # given a person under erasure
    factories.hold_create(world.tenant, "participant", "p-1")
    # when a fact about them is written
    response = fact_create(api, world.app)
    # then the failure event says what the caller was told, and where the write was aimed
    assert response.status_code == 409
    event = only_event()
    assert (event.outcome, event.error_code) == ("failure", "erasure-in-progress")
    assert event.error == response.json()["message"]
    assert event.targets == [
        {
            "type": "preference",
            "scope": {"project_id": str(world.project.id), "participant_id": "p-1"},
        }
    ]


def test_a_bounded_ring_eviction_records_its_own_event(api, world):
    # given a ring of two notes per scope
    factories.write_policy_create(world.tenant, "preference", max_records=2)
    ids = [
        fact_create(api, world.app, content={"text": t}).json()["fact"]["id"] for t in ("a", "b")
    ]
    # when a third is written into that scope
    third = fact_create(api, world.app, content={"text": "c"})
    assert third.status_code == 201, third.json()
    # then the eviction of the oldest is on record, before the write that caused it
    evicted, written = AuditEvent.objects.order_by("seq")[2:]
    assert (evicted.phase, evicted.outcome, evicted.kind) == ("delete", "success", "fact")
    assert evicted.endpoint == "policy:cap-cull"
    assert evicted.principal == world.app.principal.id
    assert evicted.object_ids == [ids[0]]
    assert evicted.subjects == ["participant:p-1"]
    assert evicted.targets == [{"type": "preference", "scope": third.json()["fact"]["scope"]}]
    assert evicted.query_snapshot == {"max_records": 2, "written": third.json()["fact"]["id"]}
    assert (written.endpoint, written.phase) == ("POST facts", "write")
    # and the stream answers it by phase
    page = api.get("/v1/audit", {"phase": "delete"}, **world.admin.headers).json()
    assert [e["object_ids"] for e in page["events"]] == [[ids[0]]]


def test_a_ring_write_rolled_back_leaves_no_eviction_on_record(api, world, monkeypatch):
    from facts import views

    factories.write_policy_create(world.tenant, "preference", max_records=1)
    kept = fact_create(api, world.app).json()["fact"]["id"]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("rendering failed after the write")

    monkeypatch.setattr(views, "_write_response", broken)
    with pytest.raises(RuntimeError):
        fact_create(api, world.app, content={"text": "next"})
    # the evicted fact is live again, and no event says it was evicted
    assert Revision.objects.live().get().fact_id == uuid.UUID(kept)
    assert not AuditEvent.objects.filter(phase="delete").exists()


def test_a_refused_write_records_a_failure_with_its_code_and_writes_nothing(api, world):
    response = fact_create(api, world.app, type="")
    assert response.status_code == 400
    event = only_event()
    assert (event.phase, event.outcome, event.error_code) == (
        "write",
        "failure",
        "validation-error",
    )
    assert Revision.objects.count() == 0


def test_a_write_for_a_held_person_records_erasure_in_progress(api, world):
    factories.hold_create(world.tenant, "participant", "p-1")
    assert fact_create(api, world.app).status_code == 409
    assert only_event().error_code == "erasure-in-progress"


def test_reads_record_the_facts_returned_and_their_subjects(api, world):
    fact_id = fact_create(api, world.app).json()["fact"]["id"]
    fact_create(api, world.app, participant="p-2", content={"text": "likes coffee"})
    AuditEvent.objects.all().delete()
    run = factories.run_create(world.app, world.project, participant_id="p-1")
    # when the run lists, reads one fact, and reads its history
    assert api.get("/v1/facts", **run.headers).status_code == 200
    assert api.get(f"/v1/facts/{fact_id}", **run.headers).status_code == 200
    assert api.get(f"/v1/facts/{fact_id}/revisions", **run.headers).status_code == 200
    # then three read events, each naming only what the run could see
    events = list(AuditEvent.objects.order_by("seq"))
    assert [(e.phase, e.outcome) for e in events] == [("read", "success")] * 3
    for event in events:
        assert event.object_ids == [fact_id]
        assert event.subjects == ["participant:p-1"]
        assert event.run_id == run.run.id
        assert event.agent_id == "support-bot"


def test_reading_a_missing_fact_records_a_failed_read(api, world):
    response = api.get("/v1/facts/7d0c3c1e-0000-4000-8000-000000000000", **world.app.headers)
    assert response.status_code == 404
    event = only_event()
    assert (event.phase, event.outcome, event.error_code) == ("read", "failure", "fact-not-found")


def test_delete_supersede_verify_and_links_each_record_their_phase(api, world):
    first = fact_create(api, world.app).json()["fact"]["id"]
    second = fact_create(api, world.app, content={"text": "likes tea"}).json()["fact"]["id"]
    AuditEvent.objects.all().delete()
    calls = [
        api.post(
            f"/v1/facts/{first}/supersede",
            {"content": {"text": "v2"}},
            format="json",
            **world.app.headers,
        ),
        api.post(f"/v1/facts/{first}/verify", {}, format="json", **world.admin.headers),
        api.post(
            f"/v1/facts/{first}/links",
            {"target": second, "type": "related"},
            format="json",
            **world.app.headers,
        ),
        api.get(f"/v1/facts/{first}/links", **world.app.headers),
        api.delete(f"/v1/facts/{second}", **world.app.headers),
    ]
    assert [c.status_code for c in calls] == [201, 201, 201, 200, 200]
    events = list(AuditEvent.objects.order_by("seq"))
    assert [(e.phase, e.outcome) for e in events] == [
        ("write", "success"),
        ("write", "success"),
        ("write", "success"),
        ("read", "success"),
        ("delete", "success"),
    ]
    assert events[2].object_ids == [first, second]
    assert events[3].object_ids == [first, second]  # where the traversal began, and what it reached
    assert events[4].object_ids == [second]


def test_a_write_rolled_back_by_a_bug_leaves_no_success_event(api, world, monkeypatch):
    from facts import views

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("rendering failed after the write")

    monkeypatch.setattr(views, "_write_response", broken)
    with pytest.raises(RuntimeError):
        fact_create(api, world.app)
    # the write is gone, and the only event says the attempt failed
    assert Revision.objects.count() == 0
    event = only_event()
    assert (event.outcome, event.error_code) == ("failure", "persistence-error")
    # its message names what failed, never the exception's text
    assert event.error == "The server failed to complete the request (RuntimeError)."


def test_messages_and_recall_record_write_and_retrieve(api, world, settings):
    settings.EMBEDDER = "hashing"
    run = factories.run_create(world.app, world.project, participant_id="cust-1", thread_id="c-1")
    appended = api.post(
        "/v1/conversations/c-1/messages",
        {"messages": [{"role": "user", "text": "my order never arrived"}]},
        format="json",
        **run.headers,
    )
    assert appended.status_code == 201
    message_ref = f"c-1#{appended.json()['messages'][0]['sequence']}"
    recalled = api.post(
        "/v1/recall",
        {"selections": [{"agent_id": "support-bot"}], "mode": "keyword", "query": "order"},
        format="json",
        **world.app.headers,
    )
    assert recalled.status_code == 200
    write, retrieve = AuditEvent.objects.order_by("seq")
    assert (write.kind, write.phase, write.outcome) == ("message", "write", "success")
    assert write.object_ids == [message_ref]
    assert write.subjects == ["participant:cust-1"]
    assert (retrieve.phase, retrieve.outcome) == ("retrieve", "success")
    assert retrieve.object_ids == [message_ref]
    assert retrieve.query_snapshot["mode"] == "keyword"
    assert "query" not in retrieve.query_snapshot  # the tenant did not allow query text


def test_semantic_recall_without_an_embedder_records_the_failure(api, world):
    response = api.post(
        "/v1/recall",
        {"selections": [{"agent_id": "support-bot"}], "mode": "semantic", "query": "order"},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 503
    event = only_event()
    assert (event.phase, event.outcome, event.error_code) == (
        "retrieve",
        "failure",
        "embedding-unavailable",
    )


def test_unauthenticated_calls_are_not_recorded(api, db):
    assert api.get("/v1/facts").status_code == 401
    assert AuditEvent.objects.count() == 0


def test_only_successful_reads_commit_their_event_without_waiting_for_the_flush(api, world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def audit_statement(call: Any) -> str:
        with CaptureQueriesContext(connection) as captured:
            call()
        [statement] = [q["sql"] for q in captured if "pg_advisory_xact_lock" in q["sql"]]
        return statement

    write = audit_statement(lambda: fact_create(api, world.app))
    read = audit_statement(lambda: api.get("/v1/facts", **world.app.headers))
    assert "CASE WHEN false" in write  # a write's event is as durable as the write
    assert "CASE WHEN true" in read


def test_hole_17_an_audit_lookup_by_fact_finds_its_remember_and_approval_events(api, world):
    # given a memory an agent remembered that waited for review, a reviewer who listed the
    # queue and approved it, then a read and a supersede of the fact
    run = factories.run_create(world.app, world.project, agent=declare(world.agent))
    reviewer = reviewer_create(world)
    remembered = remember(api, run, text="Always greet her in Spanish.").json()
    assert remembered["approval_id"], remembered
    fact_id = remembered["fact"]["id"]
    assert api.get("/v1/approvals", **reviewer.key.headers).status_code == 200
    approved = api.post(
        f"/v1/approvals/{remembered['approval_id']}/approve",
        {},
        format="json",
        **reviewer.key.headers,
    )
    assert approved.status_code == 200, approved.json()
    assert api.get(f"/v1/facts/{fact_id}", **world.app.headers).status_code == 200
    superseded = api.post(
        f"/v1/facts/{fact_id}/supersede",
        {"content": {"text": "Greet her in Spanish."}},
        format="json",
        **world.app.headers,
    )
    assert superseded.status_code == 201, superseded.json()
    # and an event about another fact, which the lookup leaves out
    fact_create(api, world.app)
    # when a tenant admin looks the fact up in the audit stream
    response = api.get("/v1/audit", {"fact_id": fact_id}, **world.admin.headers)
    # then every event about any of its revisions comes, in order
    assert response.status_code == 200, response.json()
    events = response.json()["events"]
    assert [(e["endpoint"], e["phase"]) for e in events] == [
        ("POST remember", "write"),
        ("GET approvals", "read"),
        ("POST approval-approve", "write"),
        ("GET fact", "read"),
        ("POST fact-supersede", "write"),
    ]
    assert all(fact_id in e["object_ids"] for e in events)
    # and the events of the review still name the revision they decided
    assert remembered["fact"]["revision_id"] in events[0]["object_ids"]
    assert remembered["fact"]["revision_id"] in events[2]["object_ids"]
    # and the fact's type and scope, by which the stream finds them too
    target = {"type": remembered["fact"]["type"], "scope": remembered["fact"]["scope"]}
    assert all(e["targets"] == [target] for e in events)
    by_scope = api.get(
        "/v1/audit",
        {"type": target["type"], **target["scope"]},
        **world.admin.headers,
    ).json()["events"]
    assert [e["seq"] for e in by_scope] == [e["seq"] for e in events]


def test_hole_17_events_recorded_before_the_fix_gain_their_fact_id(api, world):
    # given a remember event and a decision event as they were recorded before (the revision
    # id alone), and a review event holding an id that is no UUID
    run = factories.run_create(world.app, world.project, agent=declare(world.agent))
    reviewer = reviewer_create(world)
    remembered = remember(api, run, text="Always greet her in Spanish.").json()
    approve_url = f"/v1/approvals/{remembered['approval_id']}/approve"
    api.post(approve_url, {}, format="json", **reviewer.key.headers)
    revision_id, fact_id = remembered["fact"]["revision_id"], remembered["fact"]["id"]
    AuditEvent.objects.all().update(object_ids=[revision_id])
    odd = AuditNote(phase="write", kind="fact")
    odd.touch(ids=["not-a-uuid"])
    audit_record(
        principal=reviewer.key.principal,
        note=odd,
        outcome="failure",
        endpoint="POST approval-reject",
    )
    # when the migration's backfill runs
    migration = importlib.import_module("approvals.migrations.0003_audit_events_name_their_fact")
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL, [migration.ENDPOINTS])
    # then the remember and review events name the fact too, and the rest is as it was
    events = {e.endpoint: e.object_ids for e in AuditEvent.objects.all()}
    assert events == {
        "POST remember": [revision_id, fact_id],
        "POST approval-approve": [revision_id, fact_id],
        "POST approval-reject": ["not-a-uuid"],
    }
