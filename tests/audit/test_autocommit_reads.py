"""A search runs without a transaction of its own (AuditedView.reads_in_autocommit): its event
is still committed exactly when it is answered."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from facts import services
from tests import factories


def remembered(world: Any, settings: Any) -> Any:
    settings.EMBEDDER = "hashing"
    scope = {"project_id": str(world.project.id), "participant_id": "u-1"}
    for i in range(3):
        services.fact_create(
            principal=world.app.principal, type="note", content=f"likes tea {i}", scope=scope
        )
    return factories.run_create(world.app, world.project, participant_id="u-1", thread_id=None)


def search(api: Any, run: Any) -> Any:
    return api.post(
        "/v1/facts/search", {"mode": "hybrid", "query": "tea"}, format="json", **run.headers
    )


def committed_events(kind: str) -> list[tuple[str, str]]:
    """The events another connection sees: only committed ones."""
    seen: list[tuple[str, str]] = []

    def read() -> None:
        try:
            seen.extend(AuditEvent.objects.filter(phase=kind).values_list("phase", "outcome"))
        finally:
            connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return seen


@pytest.mark.django_db(transaction=True)
def test_a_search_takes_no_transaction_and_its_event_is_committed_when_answered(
    api: Any, world: Any, settings: Any
) -> None:
    # given: an end user's run with facts to find
    run = remembered(world, settings)

    # when: it searches
    with CaptureQueriesContext(connection) as captured:
        response = search(api, run)

    # then: answered with no BEGIN, COMMIT or savepoint, and its event already committed
    assert response.status_code == 200
    assert len(response.json()["hits"]) == 3
    opened = [q["sql"] for q in captured if q["sql"].split()[0] in {"BEGIN", "COMMIT", "SAVEPOINT"}]
    assert opened == []
    assert committed_events("retrieve") == [("retrieve", "success")]


@pytest.mark.django_db
def test_a_search_whose_event_cannot_be_written_is_not_answered(
    api: Any, world: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audit import recording

    # given: a run, and an audit stream that refuses the success event
    run = remembered(world, settings)
    record = recording.audit_record

    def refuse_success(**kwargs: Any) -> Any:
        if kwargs["outcome"] == "success":
            raise RuntimeError("the event could not be written")
        return record(**kwargs)

    monkeypatch.setattr(recording, "audit_record", refuse_success)

    # when: it searches, then: no answer, and the attempt is on record as failed
    with pytest.raises(RuntimeError):
        search(api, run)
    events = list(AuditEvent.objects.filter(phase="retrieve").values_list("outcome", "error_code"))
    assert events == [("failure", "persistence-error")]
