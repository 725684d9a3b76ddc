"""DESIGN rule 3 on every read path, history and as-of reads included: a read returns only
current, approved, unexpired revisions, and a fact no read returns has no history to show."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from facts import sweeps
from facts.models import Revision
from tests import factories

pytestmark = pytest.mark.django_db

NOT_FOUND = {
    "code": "fact-not-found",
    "message": "No such fact, or not one this credential may read.",
    "details": None,
}


def create(api: Any, keyed: Any, **body: Any) -> dict[str, Any]:
    body.setdefault("type", "preference")
    response = api.post("/v1/facts", body, format="json", **keyed.headers)
    assert response.status_code == 201, response.json()
    return response.json()["fact"]


def supersede(api: Any, keyed: Any, fact_id: str, content: Any) -> dict[str, Any]:
    response = api.post(
        f"/v1/facts/{fact_id}/supersede", {"content": content}, format="json", **keyed.headers
    )
    assert response.status_code == 201, response.json()
    return response.json()["fact"]


def participant_scope(world: Any) -> dict[str, str]:
    return {"project_id": str(world.project.id), "participant_id": "p-1"}


def readers_of_p1(world: Any) -> list[Any]:
    """Every kind of credential that reads participant p-1's facts."""
    return [
        world.admin,
        world.app,
        factories.run_create(world.app, world.project, participant_id="p-1"),
    ]


def assert_nothing_about(api: Any, keyed: Any, fact_id: str, *, as_of: Any) -> None:
    """Every read path answers for `fact_id` as for a fact that never existed."""
    for path in (f"/v1/facts/{fact_id}", f"/v1/facts/{fact_id}/revisions"):
        got = api.get(path, **keyed.headers)
        assert (got.status_code, got.json()) == (404, NOT_FOUND), path
    links = api.get(f"/v1/facts/{fact_id}/links", **keyed.headers)
    assert (links.status_code, links.json()) == (404, NOT_FOUND)
    then = api.get("/v1/facts", {"as_of": as_of.isoformat()}, **keyed.headers)
    assert then.status_code == 200, then.json()
    assert fact_id not in [f["id"] for f in then.json()["facts"]]
    found = api.post(
        "/v1/facts/search", {"mode": "keyword", "query": "tea"}, format="json", **keyed.headers
    )
    assert found.status_code == 200, found.json()
    assert fact_id not in [h["fact"]["id"] for h in found.json()["hits"]]


def test_hole_7_deleted_fact_history_serves_no_content(api, world) -> None:
    # given: a fact with two revisions, a moment while it was current, then its deletion
    fact = create(api, world.app, scope=participant_scope(world), content="likes green tea")
    supersede(api, world.app, fact["id"], "likes oolong tea")
    while_current = timezone.now()
    assert api.delete(f"/v1/facts/{fact['id']}", **world.app.headers).status_code == 200

    # when / then: no reader gets its history, its links, or its content as of before
    for keyed in readers_of_p1(world):
        assert_nothing_about(api, keyed, fact["id"], as_of=while_current)


def test_hole_7_expired_fact_history_serves_no_content(api, world) -> None:
    # given: a fact whose current revision has expired (not yet swept) over an older one
    # that has no expiry of its own
    fact = create(api, world.admin, scope=participant_scope(world), content="likes green tea")
    current = supersede(api, world.admin, fact["id"], "likes oolong tea")
    while_current = timezone.now()
    Revision.objects.filter(pk=current["revision_id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    # when / then: the fact reads as nothing, its history included; and again once swept
    for keyed in readers_of_p1(world):
        assert_nothing_about(api, keyed, fact["id"], as_of=while_current)
    sweeps.expiry_sweep()
    assert Revision.objects.get(pk=current["revision_id"]).invalidation_reason == "expired"
    for keyed in readers_of_p1(world):
        assert_nothing_about(api, keyed, fact["id"], as_of=while_current)


def test_hole_7_a_live_fact_keeps_its_history_and_a_link_into_a_deleted_one_is_not_crossed(
    api, world
) -> None:
    # given: a live fact with two revisions, linked to a fact that was then deleted
    live = create(api, world.admin, content="likes green tea")
    supersede(api, world.admin, live["id"], "likes oolong tea")
    gone = create(api, world.admin, content="drinks coffee")
    linked = api.post(
        f"/v1/facts/{live['id']}/links",
        {"target": gone["id"], "type": "related"},
        format="json",
        **world.admin.headers,
    )
    assert linked.status_code == 201, linked.json()
    api.delete(f"/v1/facts/{gone['id']}", **world.admin.headers)

    # when: the live fact's history and links are read
    history = api.get(f"/v1/facts/{live['id']}/revisions", **world.admin.headers)
    links = api.get(f"/v1/facts/{live['id']}/links", **world.admin.headers)

    # then: its whole history, and nothing reached through the deleted fact
    assert history.status_code == 200, history.json()
    assert [r["version"] for r in history.json()["revisions"]] == [2, 1]
    assert links.status_code == 200, links.json()
    assert links.json()["reached"] == []


def test_hole_8_as_of_never_returns_a_revision_past_its_expires_at(api, world) -> None:
    # given: a fact written two hours ago, held an hour ago, expired a minute ago
    fact = create(api, world.admin, content="likes green tea")
    now = timezone.now()
    while_current = now - timedelta(hours=1)
    Revision.objects.filter(pk=fact["revision_id"]).update(
        created_at=now - timedelta(hours=2), expires_at=now - timedelta(minutes=1)
    )

    # when: the list is asked as of that moment, before and after the sweep
    before_sweep = api.get("/v1/facts", {"as_of": while_current.isoformat()}, **world.admin.headers)
    sweeps.expiry_sweep()
    after_sweep = api.get("/v1/facts", {"as_of": while_current.isoformat()}, **world.admin.headers)

    # then: it is past its expires_at now, so no read returns it, whatever the as-of time
    assert before_sweep.status_code == after_sweep.status_code == 200
    assert before_sweep.json()["facts"] == []
    assert after_sweep.json()["facts"] == []


def test_hole_8_no_read_returns_a_superseded_revision_past_its_expires_at(api, world) -> None:
    # given: a fact whose first revision (written two hours ago, held an hour ago) expired a
    # minute ago, after it was superseded by one that does not expire
    fact = create(api, world.admin, content="likes green tea")
    supersede(api, world.admin, fact["id"], "likes oolong tea")
    now = timezone.now()
    while_first = now - timedelta(hours=1)
    Revision.objects.filter(pk=fact["revision_id"]).update(
        created_at=now - timedelta(hours=2), expires_at=now - timedelta(minutes=1)
    )

    # when: its history, and the list as of when the first revision was current
    history = api.get(f"/v1/facts/{fact['id']}/revisions", **world.admin.headers)
    then = api.get("/v1/facts", {"as_of": while_first.isoformat()}, **world.admin.headers)

    # then: the live fact and its unexpired revision only
    assert [r["version"] for r in history.json()["revisions"]] == [2]
    assert then.json()["facts"] == []


def test_hole_8_as_of_in_the_future_drops_what_will_have_expired_by_then(api, world) -> None:
    # given: a fact expiring tomorrow
    fact = create(api, world.admin, content="likes green tea")
    Revision.objects.filter(pk=fact["revision_id"]).update(
        expires_at=timezone.now() + timedelta(days=1)
    )

    # when: the list is asked as of now and as of the day after tomorrow
    now = api.get("/v1/facts", {"as_of": timezone.now().isoformat()}, **world.admin.headers)
    later = api.get(
        "/v1/facts",
        {"as_of": (timezone.now() + timedelta(days=2)).isoformat()},
        **world.admin.headers,
    )

    # then: held now, not then
    assert [f["id"] for f in now.json()["facts"]] == [fact["id"]]
    assert later.json()["facts"] == []


def test_hole_7_a_missing_fact_and_an_ended_one_answer_alike(api, world) -> None:
    # given: a deleted fact and an id that never existed
    fact = create(api, world.admin, content="likes green tea")
    api.delete(f"/v1/facts/{fact['id']}", **world.admin.headers)
    missing = str(uuid.uuid4())

    # when / then: their histories are indistinguishable
    ended = api.get(f"/v1/facts/{fact['id']}/revisions", **world.admin.headers)
    nothing = api.get(f"/v1/facts/{missing}/revisions", **world.admin.headers)
    assert (ended.status_code, ended.json()) == (nothing.status_code, nothing.json())


def test_hole_7_a_fact_whose_current_subject_is_held_shows_no_history(api, world) -> None:
    # given: a fact about Ann, superseded by a revision about Bob, whose erasure is running
    fact = create(api, world.admin, content="met", subjects=[{"kind": "external", "id": "ann"}])
    response = api.post(
        f"/v1/facts/{fact['id']}/supersede",
        {"content": "met again", "subjects": [{"kind": "external", "id": "bob"}]},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 201, response.json()
    factories.hold_create(world.tenant, "external", "bob")

    # when / then: the fact reads as nothing, its older revision about Ann included
    history = api.get(f"/v1/facts/{fact['id']}/revisions", **world.admin.headers)
    assert (history.status_code, history.json()) == (404, NOT_FOUND)
