"""`PATCH /v1/facts/{id}`: a JSON merge patch (RFC 7386, seed 003's `applyUpdate`) written as
the next revision, restricted to the type's mutable fields, and refused whole when it may not
apply: under the same reader guard, review, holds and version checks as supersede."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from facts.merge_patch import merge_patch
from facts.models import Revision, WritePolicy
from tests import factories
from tests.facts.conftest import create, participant_scope

pytestmark = pytest.mark.django_db

MERGE = "application/merge-patch+json"
PROFILE = {
    "city": "Porto",
    "pets": ["cat", "fish"],
    "address": {"street": "Rua A", "zip": "4000"},
    "title": "Dr",
}


def patch(api, keyed, fact_id, body, *, query="", content_type=MERGE):
    return api.patch(
        f"/v1/facts/{fact_id}{query}",
        json.dumps(body),
        content_type=content_type,
        **keyed.headers,
    )


def _profile(api, world, **body):
    scope = participant_scope(world)
    body.setdefault("content", PROFILE)
    response = create(api, world.app, type="profile", scope=scope, **body)
    assert response.status_code == 201, response.json()
    return response.json()["fact"]


def _versions(fact_id):
    return list(Revision.objects.filter(fact_id=fact_id).values_list("version", flat=True))


def test_a_merge_patch_writes_the_next_revision_as_rfc_7386_says(api, world) -> None:
    fact = _profile(api, world)
    # when: a key changes, an array is replaced, a nested key is deleted, one is added
    response = patch(
        api,
        world.app,
        fact["id"],
        {
            "content": {
                "city": "Lisbon",
                "pets": ["dog"],
                "address": {"zip": None, "floor": 2},
                "title": None,
            }
        },
    )
    # then: version 2 holds the merged content and supersedes version 1
    assert response.status_code == 201, response.json()
    new = response.json()["fact"]
    assert new["content"] == {
        "city": "Lisbon",
        "pets": ["dog"],
        "address": {"street": "Rua A", "floor": 2},
    }
    assert (new["version"], new["supersedes"]) == (2, fact["revision_id"])
    assert new["subjects"] == fact["subjects"]
    read = api.get(f"/v1/facts/{fact['id']}", **world.app.headers).json()
    assert read["content"] == new["content"]
    # and the same patch again changes nothing
    again = patch(api, world.app, fact["id"], {"content": {"city": "Lisbon"}})
    assert again.status_code == 200
    assert again.json()["outcome"] == "unchanged"
    assert sorted(_versions(fact["id"])) == [1, 2]


def test_a_patch_sets_and_clears_validity(api, world) -> None:
    fact = _profile(api, world)
    ended = patch(api, world.app, fact["id"], {"valid_until": "2030-01-01T00:00:00Z"})
    assert ended.status_code == 201, ended.json()
    assert ended.json()["fact"]["valid_until"] == "2030-01-01T00:00:00Z"
    assert ended.json()["fact"]["content"] == PROFILE
    cleared = patch(api, world.app, fact["id"], {"valid_until": None})
    assert cleared.json()["fact"]["valid_until"] is None


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"content": None}, "content"),
        ({"type": "note"}, "type"),
        ({"scope": {}}, "scope"),
        ({"content": {"city": "X"}, "version": 9}, "version"),
        ({"valid_from": "not a date"}, "valid_from"),
        (
            {"valid_from": "2031-01-01T00:00:00Z", "valid_until": "2030-01-01T00:00:00Z"},
            "valid_until",
        ),
        (["content"], "non_field_errors"),
    ],
)
def test_a_patch_that_may_not_apply_is_refused_whole_naming_the_field(
    api, world, body, named
) -> None:
    fact = _profile(api, world)
    response = patch(api, world.app, fact["id"], body)
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "validation-error"
    assert named in response.json()["details"]
    assert _versions(fact["id"]) == [1]


def test_a_type_that_declares_its_mutable_fields_refuses_a_patch_of_another(api, world) -> None:
    # given: profiles whose write policy lets only `city` and `pets` change
    WritePolicy.objects.create(
        tenant=world.tenant, fact_type="profile", mutable_fields=["city", "pets"]
    )
    fact = _profile(api, world)
    # when: a patch touches an immutable field beside a mutable one
    refused = patch(api, world.app, fact["id"], {"content": {"city": "Braga", "title": None}})
    # then: refused whole (403, as on every door: facts.authority), naming the immutable
    # field; nothing written
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden"
    assert list(refused.json()["details"]) == ["content.title"]
    assert _versions(fact["id"]) == [1]
    # and a content replaced wholesale is refused too (it would change every field)
    wholesale = patch(api, world.app, fact["id"], {"content": "just text"})
    assert wholesale.status_code == 403
    assert list(wholesale.json()["details"]) == ["content"]
    # and a patch of the mutable fields only is written
    allowed = patch(api, world.app, fact["id"], {"content": {"city": "Braga", "pets": None}})
    assert allowed.status_code == 201, allowed.json()
    assert allowed.json()["fact"]["content"] == {
        "address": {"street": "Rua A", "zip": "4000"},
        "city": "Braga",
        "title": "Dr",
    }


def test_a_patch_sent_as_plain_json_is_unsupported_media_type(api, world) -> None:
    fact = _profile(api, world)
    response = patch(
        api, world.app, fact["id"], {"content": {"city": "X"}}, content_type="application/json"
    )
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported-media-type"
    assert _versions(fact["id"]) == [1]


def test_a_stale_expected_version_is_a_conflict(api, world) -> None:
    fact = _profile(api, world)
    assert patch(api, world.app, fact["id"], {"content": {"city": "A"}}).status_code == 201
    stale = patch(
        api, world.app, fact["id"], {"content": {"city": "B"}}, query="?expected_version=1"
    )
    assert stale.status_code == 409, stale.json()
    assert stale.json()["code"] == "conflict"
    assert sorted(_versions(fact["id"])) == [1, 2]
    unknown = patch(api, world.app, fact["id"], {"content": {"city": "B"}}, query="?version=2")
    assert unknown.status_code == 400
    assert "version" in unknown.json()["details"]


def test_no_credential_that_may_not_read_the_fact_can_patch_it(api, world, other_world) -> None:
    fact = _profile(api, world)
    other_project = factories.project_create(world.tenant, world.org)
    outsider_app = factories.app_key_create(world.tenant, [other_project])
    other_person = factories.run_create(world.app, world.project, participant_id="p-2")
    revoked = factories.app_key_create(world.tenant, [world.project])
    from kindmem import services as kindmem_services

    kindmem_services.api_key_revoke(key=revoked.key)
    for keyed, status in [
        (other_world.admin, 404),
        (outsider_app, 404),
        (other_person, 404),
        (revoked, 401),
        (factories.Keyed(key=world.app.key, token="kmk_not-a-key"), 401),
    ]:
        response = patch(api, keyed, fact["id"], {"content": {"city": "Hacked"}})
        assert response.status_code == status, (keyed, response.json())
    assert _versions(fact["id"]) == [1]
    assert patch(api, world.app, "not-a-uuid", {"content": {}}).status_code == 404


def test_a_runs_patch_goes_through_review_and_the_hold(api, world) -> None:
    from approvals.models import Approval

    # given: a project-wide fact an app wrote, and an agent's run in that project
    project = {"project_id": str(world.project.id)}
    fact = create(api, world.app, content={"text": "Refunds within 30 days."}, scope=project)
    fact = fact.json()["fact"]
    run = factories.run_create(world.app, world.project, participant_id="p-1")
    # when: the run patches it
    response = patch(api, run, fact["id"], {"content": {"text": "Refunds within 365 days."}})
    # then: the new value waits for a reviewer, as a supersede by a run does
    assert response.status_code == 201, response.json()
    assert response.json()["fact"]["review"] == "pending"
    assert Approval.objects.filter(pk=response.json()["approval_id"]).exists()
    read = api.get(f"/v1/facts/{fact['id']}", **world.app.headers).json()
    assert read["content"] == {"text": "Refunds within 30 days."}

    # and a fact about a person under erasure reads as nothing, so it is not patched either
    # (as its supersede is not)
    about = _profile(api, world)
    factories.hold_create(world.tenant, "participant", "p-1")
    held = patch(api, world.app, about["id"], {"content": {"city": "Faro"}})
    assert held.status_code == 404
    assert held.json()["code"] == "fact-not-found"
    assert _versions(about["id"]) == [1]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(target=json_values, patch=json_values)
def test_merge_patch_holds_rfc_7386s_laws(target, patch) -> None:
    merged = merge_patch(target, patch)
    # a patch applied twice is the patch applied once (RFC 7386 is idempotent)
    assert merge_patch(merged, patch) == merged
    if isinstance(patch, dict):
        for name, value in patch.items():
            if value is None:
                assert name not in merged  # null deletes
            elif not isinstance(value, dict):
                assert merged[name] == value  # scalars and arrays replace wholesale
        # keys the patch does not name are kept as they were
        if isinstance(target, dict):
            for name, value in target.items():
                if name not in patch:
                    assert merged[name] == value
    else:
        assert merged == patch  # a non-object patch replaces the target
