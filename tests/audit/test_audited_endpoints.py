"""Every memory endpoint leaves exactly one audit event per call: success or failure."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from facts.models import Revision
from kindmem.models import ErasureHold
from tests import factories

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
    ErasureHold.objects.create(
        tenant=world.tenant,
        subject_kind="participant",
        subject_id="p-1",
        erasure_id=world.tenant.id,
    )
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
