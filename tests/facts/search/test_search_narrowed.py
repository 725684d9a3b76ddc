"""A read narrowed to a caller's readers (`readers` in `POST /v1/facts/search`'s body and in
`GET /v1/facts`'s query): exactly the facts both the narrowing and the credential may read,
guarded in the query before its LIMIT, with every credential kind. The seed's binding used to
filter kindmem's top 100 hits itself, so a narrower reader missed facts ranked below them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from audit.models import AuditEvent
from tests import factories
from tests.facts.search.conftest import hit_ids, plant, search

pytestmark = pytest.mark.django_db

KINDS = ["admin", "app", "user", "run"]
MODES = ["keyword", "semantic", "hybrid"]
# Weak matches of the query, and far stronger ones: each credential's decoys outrank its own.
WEAK = [f"note {i} mentions espresso coffee" for i in range(5)]
STRONG = [f"espresso coffee espresso coffee {i}" for i in range(120)]
QUERY = "espresso coffee"


@dataclass
class Narrowed:
    """A credential, the readers a caller narrows it to, and the facts planted for them."""

    headers: dict[str, str]
    readers: dict[str, list[str]]
    own: set[str]  # both may read: all of what a narrowed read returns
    decoys: set[str]  # the credential reads them, the narrowing does not; they rank first
    beyond: set[str]  # the narrowing names them, the credential does not read them


def ids(revisions: list[Any]) -> set[str]:
    return {str(r.fact_id) for r in revisions}


def narrowed(kind: str, world: Any, other_world: Any) -> Narrowed:
    """For each credential kind: five weak matches it may read inside the narrowing, 120 strong
    ones it reads outside it (planted later: newer, so first in a list too), and strong ones the
    narrowing names that the credential does not read."""
    org, project = world.org, world.project
    elsewhere = factories.project_create(world.tenant, org)
    p, e = str(project.id), str(elsewhere.id)
    if kind == "app":  # acting for every end user of its project; narrowed to one of them
        own = plant(world.tenant, WEAK, org=org, project=project, participant_id="p1")
        decoys = plant(world.tenant, STRONG, org=org, project=project, participant_id="p2")
        beyond = plant(world.tenant, STRONG[:10], org=org, project=elsewhere, participant_id="p1")
        readers = {"project_ids": [p, e], "org_ids": [str(org.id)], "participant_ids": ["p1"]}
        return Narrowed(world.app.headers, readers, ids(own), ids(decoys), ids(beyond))
    if kind == "user":  # its projects and its own facts; narrowed to its own (and others')
        stranger = factories.user_create(world.tenant)
        own = plant(world.tenant, WEAK, user_id=world.user.id)
        decoys = plant(world.tenant, STRONG, org=org, project=project)
        beyond = plant(world.tenant, STRONG[:10], user_id=stranger.id) + plant(
            world.tenant, STRONG[:10], org=org, project=elsewhere
        )
        readers = {"user_ids": [str(world.user.id), str(stranger.id)], "project_ids": [e]}
        return Narrowed(world.user_key.headers, readers, ids(own), ids(decoys), ids(beyond))
    if kind == "admin":  # the whole tenant; narrowed to one end user of one project
        own = plant(world.tenant, WEAK, org=org, project=project, participant_id="p1")
        decoys = plant(world.tenant, STRONG, org=org, project=elsewhere, participant_id="p1")
        other = other_world.project
        beyond = plant(
            other_world.tenant, STRONG[:10], org=other.org, project=other, participant_id="p1"
        )
        readers = {"project_ids": [p, str(other.id)], "participant_ids": ["p1"]}
        return Narrowed(world.admin.headers, readers, ids(own), ids(decoys), ids(beyond))
    assert kind == "run"  # its end user and its thread; narrowed to the end user's, no thread
    run = factories.run_create(world.app, project, participant_id="p1", thread_id="t1")
    own = plant(world.tenant, WEAK, org=org, project=project, participant_id="p1")
    decoys = plant(
        world.tenant, STRONG, org=org, project=project, participant_id="p1", thread_id="t1"
    )
    beyond = plant(world.tenant, STRONG[:10], org=org, project=project, participant_id="p2")
    readers = {"project_ids": [p], "participant_ids": ["p1", "p2"]}
    return Narrowed(run.headers, readers, ids(own), ids(decoys), ids(beyond))


def listed(api: Any, headers: dict[str, str], **query: Any) -> Any:
    return api.get("/v1/facts", query, **headers)


def list_all(api: Any, headers: dict[str, str], **query: Any) -> list[str]:
    """Every fact id `GET /v1/facts` pages through with this query."""
    found: list[str] = []
    cursor: dict[str, str] = {}
    while True:
        response = listed(api, headers, **query, **cursor)
        assert response.status_code == 200, response.json()
        found += [f["id"] for f in response.json()["facts"]]
        if not response.json()["next_cursor"]:
            return found
        cursor = {"cursor": response.json()["next_cursor"]}


@pytest.mark.parametrize("kind", KINDS)
def test_a_narrowed_search_finds_what_both_may_read_below_a_hundred_better_hits(
    api, world, other_world, kind
):
    # given: a credential whose 120 best hits are outside the narrowing, five weaker ones
    # inside it, and strong matches the narrowing names but the credential does not read
    case = narrowed(kind, world, other_world)
    for mode in MODES:
        # (the credential's own top 100 holds none of the five: filtering it cannot find them)
        plain = search(api, case.headers, mode=mode, query=QUERY, top_k=100)
        assert plain.status_code == 200, plain.json()
        assert not set(hit_ids(plain)) & case.own, (kind, mode)

        # when: the same search, narrowed, asks for ten
        response = search(api, case.headers, mode=mode, query=QUERY, top_k=10, readers=case.readers)

        # then: exactly the five both may read; nothing the narrowing excludes, and nothing
        # beyond the credential's readers, whatever the narrowing names
        assert response.status_code == 200, response.json()
        assert set(hit_ids(response)) == case.own, (kind, mode)


@pytest.mark.parametrize("kind", KINDS)
def test_a_narrowed_list_pages_through_exactly_what_both_may_read(api, world, other_world, kind):
    # given: five facts inside the narrowing, older than 120 the credential reads outside it
    case = narrowed(kind, world, other_world)
    newest = listed(api, case.headers, limit=100)
    assert not {f["id"] for f in newest.json()["facts"]} & case.own

    # when: the list is narrowed, two a page
    found = list_all(api, case.headers, readers=json.dumps(case.readers), limit=2)

    # then: every page holds only those five, and all of them
    assert sorted(found) == sorted(case.own), kind
    assert not set(found) & (case.decoys | case.beyond)


@pytest.mark.parametrize("kind", KINDS)
def test_a_narrowing_wider_than_the_credential_is_intersected_never_widened(
    api, world, other_world, kind
):
    # given: the facts of each kind, and a narrowing naming everything in sight
    case = narrowed(kind, world, other_world)
    everything = {
        name: sorted({*case.readers.get(name, []), *extra})
        for name, extra in {
            "project_ids": [str(world.project.id)],
            "org_ids": [str(world.org.id)],
            "user_ids": [str(world.user.id)],
            "participant_ids": ["p1", "p2"],
            "thread_ids": ["t1"],
            "on_behalf_of_project_ids": case.readers.get("project_ids", []),
        }.items()
    }
    for readers in (everything, {"all": True}):
        # when: it searches and lists with it
        hits = search(api, case.headers, mode="keyword", query=QUERY, top_k=100, readers=readers)
        found = list_all(api, case.headers, readers=json.dumps(readers), limit=200)

        # then: never a fact beyond the credential's readers
        assert hits.status_code == 200, hits.json()
        assert not set(hit_ids(hits)) & case.beyond, (kind, readers)
        assert not set(found) & case.beyond, (kind, readers)
    # and `all` narrows nothing: the credential's own list
    plain = list_all(api, case.headers, limit=200)
    assert sorted(list_all(api, case.headers, readers='{"all": true}', limit=200)) == sorted(plain)


def test_no_readers_at_all_read_tenant_wide_facts_only(api, world):
    # given: a tenant-wide fact, a project's and an end user's
    tenant_wide = ids(plant(world.tenant, ["espresso coffee for everyone"]))
    plant(world.tenant, ["espresso coffee in the project"], org=world.org, project=world.project)
    plant(
        world.tenant,
        ["espresso coffee for p1"],
        org=world.org,
        project=world.project,
        participant_id="p1",
    )
    # when: the app's key narrows to no readers (the seed's absent `readers`)
    hits = search(api, world.app.headers, mode="keyword", query=QUERY, readers={})
    found = list_all(api, world.app.headers, readers="{}")
    # then: only the tenant-wide fact
    assert set(hit_ids(hits)) == tenant_wide
    assert set(found) == tenant_wide


def test_a_narrowed_search_is_audited_with_its_readers(api, world):
    # given: an app's fact for one end user
    plant(world.tenant, WEAK[:1], org=world.org, project=world.project, participant_id="p1")
    readers = {"project_ids": [str(world.project.id)], "participant_ids": ["p1"]}
    # when: the app searches narrowed to that end user
    response = search(api, world.app.headers, mode="keyword", query=QUERY, readers=readers)
    # then: the retrieve event keeps the narrowing it was asked with
    assert response.status_code == 200
    event = AuditEvent.objects.filter(tenant=world.tenant, phase="retrieve").latest("seq")
    assert event.query_snapshot["readers"]["participant_ids"] == ["p1"]
    assert event.query_snapshot["readers"]["project_ids"] == [str(world.project.id)]


@pytest.mark.parametrize(
    ("readers", "field"),
    [
        ({"project_ids": ["not-a-uuid"]}, "project_ids"),
        ({"participant_ids": "p1"}, "participant_ids"),
        ({"participant_ids": [7]}, "participant_ids"),
        ({"participant_ids": ["x" * 201]}, "participant_ids"),
        ({"thread_ids": ["a\x00b"]}, "thread_ids"),
        ({"participant_ids": [f"p{i}" for i in range(1001)]}, "participant_ids"),
        ({"all": "yes"}, "all"),
        ({"projects": []}, "projects"),
    ],
)
def test_bad_readers_are_refused_with_the_error_shape(api, world, readers, field):
    # when: a search and a list name readers the API cannot take
    searched = search(api, world.app.headers, mode="keyword", query=QUERY, readers=readers)
    listed_ = listed(api, world.app.headers, readers=json.dumps(readers))
    # then: 400 validation errors naming the field, never a 500
    for response in (searched, listed_):
        assert response.status_code == 400, response.content
        body = response.json()
        assert body["code"] == "validation-error"
        assert field in json.dumps(body["details"]["readers"])


@pytest.mark.parametrize("text", ["not json", "[]", '"p1"', "[" * 5000, "{" * 300])
def test_a_list_query_whose_readers_are_not_a_json_object_is_a_400(api, world, text):
    response = listed(api, world.app.headers, readers=text)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation-error"
    assert "readers" in response.json()["details"]
