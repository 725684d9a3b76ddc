"""Facts out as the 003 seed's memory files, through the real client and URL:
`GET /v1/facts/export`, a zip of `facts/<id>.md`, of what the credential may read and at most
what one import takes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from facts.memory_files import content_of
from tests import factories
from tests.conftest import AUDIT_QUERIES, TENANT_QUERIES
from tests.facts.conftest import create, participant_scope
from tests.facts.memory_file_requests import export, parsed
from tests.oracles import ENVELOPE_FIELDS

pytestmark = pytest.mark.django_db


def test_an_export_is_a_memory_file_per_fact_in_the_seeds_own_format(api, world):
    # given two facts of one end user, one linked to the other, one superseded
    scope = participant_scope(world)
    a = create(api, world.app, content={"text": "likes tea"}, scope=scope, tags=["diet"])
    a = a.json()["fact"]
    b = create(api, world.app, type="note", content="met at the fair", scope=scope).json()["fact"]
    api.post(
        f"/v1/facts/{a['id']}/supersede",
        {"content": {"text": "likes coffee"}},
        format="json",
        **world.app.headers,
    )
    api.post(
        f"/v1/facts/{a['id']}/links",
        {"target": b["id"], "type": "about", "confidence": 0.5},
        format="json",
        **world.app.headers,
    )

    # when the app exports its facts
    files = parsed(export(api, world.app))

    # then there is one facts/<id>.md per fact, its frontmatter only the seed's envelope
    assert set(files) == {a["id"], b["id"]}
    envelope, body = files[a["id"]]
    assert set(envelope) <= set(ENVELOPE_FIELDS)
    assert (envelope["id"], envelope["entityId"], envelope["kind"]) == (
        a["id"],
        a["id"],
        "preference",
    )
    assert envelope["tags"] == ["diet"]
    assert envelope["provenance"]["source"] == "host-ingest"
    assert envelope["provenance"]["by"] == f"app:{world.app.key.id}"
    # its body the current revision's content (JSON here), never its history
    extension = envelope["provenance"]["kindmem"]
    assert extension["body"] == "json"
    assert content_of(body, "json") == {"text": "likes coffee"}
    assert "tea" not in body
    assert extension["revision"]["version"] == 2
    assert extension["revision"]["current"] is True
    assert extension["scope"] == {
        "org_id": str(world.org.id),
        "project_id": str(world.project.id),
        "participant_id": "p-1",
    }
    assert (
        envelope["contentHash"]
        == api.get(f"/v1/facts/{a['id']}", **world.app.headers).json()["content_hash"]
    )
    # the same facts export to the same bytes
    again = api.get("/v1/facts/export", **world.app.headers).content
    assert again == api.get("/v1/facts/export", **world.app.headers).content
    # and the link is an IEdge to the other fact
    [edge] = envelope["links"]
    assert (edge["type"], edge["target"], edge["confidence"]) == ("about", b["id"], 0.5)
    assert edge["provenance"]["source"] == "host-ingest"
    # a string content is the body verbatim
    other, other_body = files[b["id"]]
    assert (other["provenance"]["kindmem"]["body"], other_body) == ("text", "met at the fair")


def test_an_export_takes_the_lists_filters_and_never_names_what_the_credential_cannot_read(
    api, world
):
    # given facts of two end users, and a link from p-1's fact to p-2's
    mine = create(api, world.app, scope=participant_scope(world, "p-1")).json()["fact"]
    theirs = create(api, world.app, scope=participant_scope(world, "p-2")).json()["fact"]
    note = create(
        api, world.app, type="note", content="x", scope=participant_scope(world, "p-1")
    ).json()["fact"]
    api.post(
        f"/v1/facts/{mine['id']}/links",
        {"target": theirs["id"], "type": "about"},
        format="json",
        **world.app.headers,
    )
    run = factories.run_create(world.app, world.project, participant_id="p-1")

    # when the run for p-1 exports, then it gets p-1's facts only, and no link to p-2's fact
    files = parsed(export(api, run))
    assert set(files) == {mine["id"], note["id"]}
    assert files[mine["id"]][0]["links"] == []
    # and the filters narrow it as they narrow the list
    assert set(parsed(export(api, run, type="note"))) == {note["id"]}
    assert set(parsed(export(api, world.app, participant_id="p-2"))) == {theirs["id"]}
    # and the app, which may read both, sees the link
    [edge] = parsed(export(api, world.app))[mine["id"]][0]["links"]
    assert edge["target"] == theirs["id"]


def test_an_export_of_another_tenant_is_empty_and_a_bad_filter_is_a_400(api, world, other_world):
    create(api, world.app, scope=participant_scope(world))
    assert export(api, other_world.admin) == {}
    response = api.get("/v1/facts/export", {"limit": 5}, **world.app.headers)
    assert response.status_code == 400
    assert set(response.json()) == {"code", "message", "details"}
    assert response.json()["details"] == {"limit": ["Unknown field."]}


def test_an_export_costs_the_same_queries_for_two_facts_and_for_twenty(
    api, world, django_assert_num_queries
):
    first = create(api, world.app, content={"i": 0}, scope=participant_scope(world))
    first_id = first.json()["fact"]["id"]

    def plant(start: int, stop: int) -> None:
        """Facts each linked to the first one."""
        for i in range(start, stop):
            fact = create(api, world.app, content={"i": i}, scope=participant_scope(world))
            assert fact.status_code == 201
            api.post(
                f"/v1/facts/{fact.json()['fact']['id']}/links",
                {"target": first_id, "type": "next"},
                format="json",
                **world.app.headers,
            )

    plant(1, 2)
    with CaptureQueriesContext(connection) as two:
        assert len(export(api, world.app)) == 2
    # auth, the key's projects, the revisions, their subjects, the projects again for the links'
    # guard, the links (and the tenant's and the audit's statements)
    assert len(two.captured_queries) == 6 + TENANT_QUERIES + AUDIT_QUERIES
    plant(2, 20)
    with django_assert_num_queries(6 + TENANT_QUERIES + AUDIT_QUERIES):
        assert len(export(api, world.app)) == 20


def test_an_export_holds_at_most_what_one_import_takes(api, world, settings):
    settings.MEMORY_FILES_MAX = 2
    for i in range(3):
        create(api, world.app, content={"i": i}, scope=participant_scope(world))
    response = api.get("/v1/facts/export", **world.app.headers)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert "at most 2" in response.json()["message"]
    assert len(export(api, world.app, type="preference", key="none-such")) == 0
