"""A link's life (seed 003's attributed edges): updated and removed through the API, ended by
`invalid_at` (never traversed from then on), and traversal ordered by recency and filtered like
a query; every change only by a credential that may read the link's fact."""

from __future__ import annotations

import json

import pytest

from facts.models import Link
from tests import factories
from tests.facts.conftest import create, participant_scope

pytestmark = pytest.mark.django_db


def _fact(api, keyed, text, scope=None, **body):
    response = create(api, keyed, content={"text": text}, scope=scope or {}, **body)
    assert response.status_code == 201, response.json()
    return response.json()["fact"]["id"]


def _link(api, keyed, source, target, **body):
    response = api.post(
        f"/v1/facts/{source}/links",
        {"target": target, "type": "related", **body},
        format="json",
        **keyed.headers,
    )
    assert response.status_code == 201, response.json()
    return response.json()["link"]


def _reached(api, keyed, fact, **params):
    response = api.get(f"/v1/facts/{fact}/links", params, **keyed.headers)
    assert response.status_code == 200, response.json()
    return [r["fact"]["id"] for r in response.json()["reached"]]


def test_a_link_is_updated_and_removed(api, world) -> None:
    a, b = _fact(api, world.admin, "a"), _fact(api, world.admin, "b")
    link = _link(api, world.admin, a, b, confidence=0.4, provenance={"by": "import"})
    # when its confidence changes and its provenance is cleared
    updated = api.patch(
        f"/v1/facts/{a}/links/{link['id']}",
        json.dumps({"confidence": 0.9, "provenance": None}),
        content_type="application/json",
        **world.admin.headers,
    )
    assert updated.status_code == 200, updated.json()
    assert (updated.json()["link"]["confidence"], updated.json()["link"]["provenance"]) == (
        0.9,
        None,
    )
    stored = Link.objects.get(pk=link["id"])
    assert (stored.confidence, stored.provenance, stored.type) == (0.9, None, "related")
    # and a link's ends and type are what it is: not changed, named
    refused = api.patch(
        f"/v1/facts/{a}/links/{link['id']}",
        json.dumps({"target": a}),
        content_type="application/json",
        **world.admin.headers,
    )
    assert refused.status_code == 400
    assert "target" in refused.json()["details"]
    # when it is removed
    removed = api.delete(f"/v1/facts/{a}/links/{link['id']}", **world.admin.headers)
    assert removed.status_code == 200
    assert removed.json()["link"]["id"] == link["id"]
    assert not Link.objects.filter(pk=link["id"]).exists()
    assert _reached(api, world.admin, a) == []
    # and again, it is gone
    again = api.delete(f"/v1/facts/{a}/links/{link['id']}", **world.admin.headers)
    assert again.status_code == 404


def test_an_ended_link_is_not_traversed_from_its_invalid_at_on(api, world) -> None:
    a, b, c = (_fact(api, world.admin, t) for t in "abc")
    ended = _link(api, world.admin, a, b, invalid_at="2020-01-01T00:00:00Z")
    _link(api, world.admin, a, c, valid_at="2099-01-01T00:00:00Z")
    # then neither is followed now: one ended, the other not begun
    assert _reached(api, world.admin, a) == []
    # but each is as of a time it held
    assert _reached(api, world.admin, a, at="2019-06-01T00:00:00Z") == [b]
    assert _reached(api, world.admin, a, at="2099-06-01T00:00:00Z") == [c]
    # and ending a live link through the API stops its traversal
    live = _link(api, world.admin, b, c)
    assert _reached(api, world.admin, b) == [c]
    api.patch(
        f"/v1/facts/{b}/links/{live['id']}",
        json.dumps({"invalid_at": "2021-01-01T00:00:00Z"}),
        content_type="application/merge-patch+json",
        **world.admin.headers,
    )
    assert _reached(api, world.admin, b) == []
    assert ended["invalid_at"] == "2020-01-01T00:00:00Z"


def test_traversal_orders_by_recency_and_filters_like_a_query(api, world) -> None:
    hub = _fact(api, world.admin, "hub")
    project = {"project_id": str(world.project.id)}
    old = _fact(api, world.admin, "old note", type="note", tags=["x"])
    mid = _fact(api, world.admin, "mid note", project, type="note")
    new = _fact(api, world.admin, "new pref", project, type="preference", tags=["x"])
    for target in (old, mid, new):  # the oldest fact linked first: nearest is link age
        _link(api, world.admin, hub, target)
    assert _reached(api, world.admin, hub) == [old, mid, new]
    assert _reached(api, world.admin, hub, order="recency") == [new, mid, old]
    assert _reached(api, world.admin, hub, order="recency", limit=2) == [new, mid]
    assert _reached(api, world.admin, hub, fact_type="note") == [old, mid]
    assert _reached(api, world.admin, hub, tag="x") == [old, new]
    assert _reached(api, world.admin, hub, project_id=str(world.project.id)) == [mid, new]
    unknown = api.get(f"/v1/facts/{hub}/links", {"sort": "x"}, **world.admin.headers)
    assert unknown.status_code == 400
    assert "sort" in unknown.json()["details"]


def test_only_a_credential_that_reads_the_fact_changes_its_links(api, world, other_world) -> None:
    scope = participant_scope(world, "p-1")
    a, b = _fact(api, world.app, "a", scope), _fact(api, world.app, "b", scope)
    link = _link(api, world.app, a, b)
    other_person = factories.run_create(world.app, world.project, participant_id="p-2")
    other_project = factories.app_key_create(
        world.tenant, [factories.project_create(world.tenant, world.org)]
    )
    for keyed in (other_world.admin, other_project, other_person):
        changed = api.patch(
            f"/v1/facts/{a}/links/{link['id']}",
            json.dumps({"confidence": 0.1}),
            content_type="application/json",
            **keyed.headers,
        )
        assert changed.status_code == 404, keyed
        assert api.delete(f"/v1/facts/{a}/links/{link['id']}", **keyed.headers).status_code == 404
    # nor through the other end: a link belongs to its source fact
    via_target = api.delete(f"/v1/facts/{b}/links/{link['id']}", **world.app.headers)
    assert via_target.status_code == 404
    assert api.delete(f"/v1/facts/{a}/links/not-a-uuid", **world.app.headers).status_code == 404
    stored = Link.objects.get(pk=link["id"])
    assert stored.confidence is None
