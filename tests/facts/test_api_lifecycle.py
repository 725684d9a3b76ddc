"""The facts API through the real client and URLs: a fact's life (supersede, verify, delete,
retention, holds), another tenant, links, and a re-post with new metadata (issue 13, hole 11)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from facts.models import Fact, Link, Revision, Subject
from tests import factories
from tests.facts.conftest import create, participant_scope

pytestmark = pytest.mark.django_db


def test_supersede_then_history(api, world) -> None:
    # given: a fact
    fact = create(api, world.app, scope=participant_scope(world)).json()["fact"]

    # when: it is superseded
    response = api.post(
        f"/v1/facts/{fact['id']}/supersede",
        {"content": {"text": "likes oolong"}, "expected_version": 1},
        format="json",
        **world.app.headers,
    )

    # then: version 2 supersedes version 1, which the history shows as superseded
    assert response.status_code == 201, response.json()
    new = response.json()["fact"]
    assert (new["version"], new["supersedes"]) == (2, fact["revision_id"])
    assert new["subjects"] == fact["subjects"]
    history = api.get(f"/v1/facts/{fact['id']}/revisions", **world.app.headers).json()
    assert [(r["version"], r["invalidation_reason"]) for r in history["revisions"]] == [
        (2, None),
        (1, "superseded"),
    ]


def test_supersede_with_a_stale_version_is_a_conflict(api, world) -> None:
    fact = create(api, world.admin).json()["fact"]
    api.post(
        f"/v1/facts/{fact['id']}/supersede", {"content": "b"}, format="json", **world.admin.headers
    )
    response = api.post(
        f"/v1/facts/{fact['id']}/supersede",
        {"content": "c", "expected_version": 1},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert Revision.objects.filter(fact_id=fact["id"]).count() == 2


def test_a_user_verifies_a_fact_and_a_run_may_not(api, world) -> None:
    # given: a fact in the world's project
    fact = create(api, world.app, scope={"project_id": str(world.project.id)}).json()["fact"]
    run = factories.run_create(world.app, world.project)

    # when: a run tries to verify, then a Kindgi user of the project does
    refused = api.post(f"/v1/facts/{fact['id']}/verify", {}, format="json", **run.headers)
    verified = api.post(
        f"/v1/facts/{fact['id']}/verify", {}, format="json", **world.user_key.headers
    )

    # then: the run is refused; the user's verification is a new revision
    assert refused.status_code == 403
    assert verified.status_code == 201, verified.json()
    body = verified.json()["fact"]
    assert body["trust"] == "verified"
    assert body["verified_by"] == f"user:{world.user.id}"
    assert body["version"] == 2
    assert body["content"] == fact["content"]


def test_delete_invalidates_and_hides_the_fact(api, world) -> None:
    fact = create(api, world.admin).json()["fact"]
    response = api.delete(f"/v1/facts/{fact['id']}", **world.admin.headers)
    assert response.status_code == 200
    assert response.json()["fact"]["invalidation_reason"] == "deleted"
    assert api.get(f"/v1/facts/{fact['id']}", **world.admin.headers).status_code == 404
    assert api.get("/v1/facts", **world.admin.headers).json()["facts"] == []


@pytest.mark.parametrize(
    ("retention", "reason"),
    [
        ({"legal_hold": True}, "legal-hold"),
        ({"keep_until": "2099-01-01T00:00:00Z"}, "keep-until"),
        ({"keep_days": 30}, "keep-days"),
    ],
)
def test_retention_forbids_delete(api, world, retention, reason) -> None:
    # given: a fact whose retention forbids deleting it now
    fact = create(api, world.admin, retention=retention).json()["fact"]

    # when: it is deleted
    response = api.delete(f"/v1/facts/{fact['id']}", **world.admin.headers)

    # then: 409 retention-violation with the reason; the fact is still current
    assert response.status_code == 409
    assert response.json()["code"] == "retention-violation"
    assert response.json()["details"] == {"reason": reason}
    assert api.get(f"/v1/facts/{fact['id']}", **world.admin.headers).status_code == 200


def test_keep_days_sets_the_expiry_from_the_first_write(api, world) -> None:
    fact = create(api, world.admin, retention={"keep_days": 10}).json()["fact"]
    created = Fact.objects.get(id=fact["id"]).created_at
    assert Revision.objects.get(id=fact["revision_id"]).expires_at == created + timedelta(days=10)


def test_a_write_for_a_person_under_erasure_is_refused_and_writes_nothing(api, world) -> None:
    # given: an erasure in progress for participant p-1
    factories.hold_create(world.tenant, "participant", "p-1")

    # when: an app writes a fact about p-1
    response = create(api, world.app, scope=participant_scope(world, "p-1"))

    # then: 409 erasure-in-progress, nothing written
    assert response.status_code == 409
    assert response.json()["code"] == "erasure-in-progress"
    assert Fact.objects.count() == 0
    assert Subject.objects.count() == 0


def test_a_held_persons_facts_read_as_nothing(api, world) -> None:
    fact = create(api, world.app, scope=participant_scope(world, "p-1")).json()["fact"]
    factories.hold_create(world.tenant, "participant", "p-1")
    assert api.get(f"/v1/facts/{fact['id']}", **world.admin.headers).status_code == 404
    assert api.get("/v1/facts", **world.admin.headers).json()["facts"] == []


def test_another_tenant_never_sees_counts_or_infers_a_fact(api, world, other_world) -> None:
    # given: a fact of the world, and a foreign admin
    fact = create(api, world.admin, content="secret").json()["fact"]
    other = factories.tenant_create()  # noqa: F841 - a third tenant changes nothing
    foreign = other_world.admin.headers
    fid = fact["id"]

    # when / then: every endpoint answers as for a fact that does not exist
    missing = str(uuid.uuid4())
    for path in (f"/v1/facts/{fid}", f"/v1/facts/{fid}/revisions", f"/v1/facts/{fid}/links"):
        got = api.get(path, **foreign)
        nothing = api.get(path.replace(fid, missing), **foreign)
        assert (
            (got.status_code, got.json())
            == (nothing.status_code, nothing.json())
            == (
                404,
                {
                    "code": "fact-not-found",
                    "message": "No such fact, or not one this credential may read.",
                    "details": None,
                },
            )
        )
    for verb, path, body in (
        ("post", f"/v1/facts/{fid}/supersede", {"content": "mine"}),
        ("post", f"/v1/facts/{fid}/verify", {}),
        ("post", f"/v1/facts/{fid}/links", {"target": fid, "type": "same"}),
        ("delete", f"/v1/facts/{fid}", None),
    ):
        got = getattr(api, verb)(path, body, format="json", **foreign)
        assert got.status_code == 404, (path, got.json())
    assert api.get("/v1/facts", **foreign).json() == {"facts": [], "next_cursor": None}
    assert Revision.objects.filter(fact_id=fid).count() == 1


def test_links_are_traversed_breadth_first_through_readable_facts_only(api, world) -> None:
    # given: a -> b -> c -> a (a cycle), and b -> hidden (another participant's fact)
    def make(text: str, participant: str = "p-1") -> str:
        body = create(api, world.app, content=text, scope=participant_scope(world, participant))
        return body.json()["fact"]["id"]

    a, b, c, hidden = make("a"), make("b"), make("c"), make("hidden", "p-2")
    hidden_next = make("beyond hidden", "p-2")
    for source, target in ((a, b), (b, c), (c, a), (b, hidden), (hidden, hidden_next)):
        response = api.post(
            f"/v1/facts/{source}/links",
            {"target": target, "type": "related", "confidence": 0.5},
            format="json",
            **world.app.headers,
        )
        assert response.status_code == 201, response.json()
    run = factories.run_create(world.app, world.project, participant_id="p-1")

    # when: the run for p-1 walks three hops from a
    reached = api.get(f"/v1/facts/{a}/links", {"hops": 3}, **run.headers).json()["reached"]

    # then: b at one hop, c at two; the cycle back to a stops; p-2's facts are never reached
    assert [(r["fact"]["id"], r["hops"]) for r in reached] == [(b, 1), (c, 2)]
    inbound = api.get(f"/v1/facts/{a}/links", {"direction": "in"}, **run.headers).json()
    assert [r["fact"]["id"] for r in inbound["reached"]] == [c]


def test_a_link_to_an_unreadable_fact_is_refused(api, world) -> None:
    a = create(api, world.app, scope=participant_scope(world, "p-1"), content="a").json()["fact"]
    b = create(api, world.app, scope=participant_scope(world, "p-2"), content="b").json()["fact"]
    run = factories.run_create(world.app, world.project, participant_id="p-1")
    response = api.post(
        f"/v1/facts/{a['id']}/links", {"target": b["id"], "type": "x"}, format="json", **run.headers
    )
    assert response.status_code == 404
    assert Link.objects.count() == 0


def test_a_link_confidence_outside_0_to_1_is_refused(api, world) -> None:
    a = create(api, world.admin, content="a").json()["fact"]
    response = api.post(
        f"/v1/facts/{a['id']}/links",
        {"target": a["id"], "type": "x", "confidence": 2.0},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 400
    assert "confidence" in response.json()["details"]
    assert Link.objects.count() == 0


# ---- issue 13, hole 11: a re-post with new retention, tags or subjects --------------------


@pytest.mark.parametrize(
    ("extra", "applied"),
    [
        ({"retention": {"legal_hold": True}}, lambda f: f["retention"]["legal_hold"] is True),
        ({"tags": ["allergy"]}, lambda f: f["tags"] == ["allergy", "diet"]),
        (
            {"subjects": [{"kind": "external", "id": "crm-1"}]},
            lambda f: f["subjects"] == [{"kind": "external", "id": "crm-1"}],
        ),
    ],
    ids=["legal_hold", "tags", "subjects"],
)
def test_hole_11_reposting_the_same_content_with_new_metadata_applies_it(
    api, world, extra, applied
) -> None:
    # given: a fact
    first = create(api, world.app, scope=participant_scope(world), tags=["diet"]).json()["fact"]

    # when: the same content is posted again with something new about it
    again = create(api, world.app, scope=participant_scope(world), **{"tags": ["diet"], **extra})

    # then: it is the fact's next revision, and what was new is applied
    assert again.status_code == 201, again.json()
    body = again.json()
    assert body["outcome"] == "superseded"
    assert (body["fact"]["id"], body["fact"]["version"]) == (first["id"], 2)
    assert body["fact"]["supersedes"] == first["revision_id"]
    now = api.get(f"/v1/facts/{first['id']}", **world.app.headers).json()
    assert applied(now), now
    assert now["content"] == first["content"]
    assert Fact.objects.count() == 1
    # and posting exactly that once more changes nothing
    same = create(api, world.app, scope=participant_scope(world), **{"tags": ["diet"], **extra})
    assert (same.status_code, same.json()["outcome"]) == (200, "unchanged")


def test_hole_11_a_legal_hold_reposted_onto_a_fact_then_forbids_deleting_it(api, world) -> None:
    fact = create(api, world.admin).json()["fact"]
    assert create(api, world.admin, retention={"legal_hold": True}).status_code == 201
    response = api.delete(f"/v1/facts/{fact['id']}", **world.admin.headers)
    assert response.status_code == 409
    assert response.json()["details"] == {"reason": "legal-hold"}


@pytest.mark.parametrize(
    ("extra", "applied"),
    [
        ({"retention": {"legal_hold": True}}, lambda f: f["retention"]["legal_hold"] is True),
        (
            {"subjects": [{"kind": "external", "id": "crm-1"}]},
            lambda f: f["subjects"] == [{"kind": "external", "id": "crm-1"}],
        ),
    ],
    ids=["legal_hold", "subjects"],
)
def test_hole_11_superseding_with_the_same_content_and_new_metadata_applies_it(
    api, world, extra, applied
) -> None:
    fact = create(api, world.app, scope=participant_scope(world)).json()["fact"]
    response = api.post(
        f"/v1/facts/{fact['id']}/supersede",
        {"content": fact["content"], **extra},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 201, response.json()
    assert response.json()["outcome"] == "superseded"
    assert applied(api.get(f"/v1/facts/{fact['id']}", **world.app.headers).json())


def test_hole_11_a_legal_hold_on_a_verified_fact_keeps_it_verified(api, world) -> None:
    # given: a verified fact
    fact = create(api, world.admin, content="Contract signed.").json()["fact"]
    verified = api.post(f"/v1/facts/{fact['id']}/verify", {}, format="json", **world.admin.headers)

    # when: the same content is posted again under a legal hold
    again = create(api, world.app, content="Contract signed.", retention={"legal_hold": True})

    # then: the hold is applied, and the content is still the verified one
    assert again.status_code == 201, again.json()
    now = again.json()["fact"]
    assert (now["version"], now["trust"], now["retention"]["legal_hold"]) == (3, "verified", True)
    assert now["verified_by"] == verified.json()["fact"]["verified_by"]
    assert now["expires_at"] is None


def test_hole_11_a_retention_field_a_write_leaves_out_is_kept(api, world) -> None:
    # given: a fact under a legal hold
    fact = create(api, world.admin, retention={"legal_hold": True}).json()["fact"]

    # when: the same content is written again naming only keep_days
    again = create(api, world.admin, retention={"keep_days": 30})

    # then: keep_days is applied and the hold is not lifted
    assert again.status_code == 201, again.json()
    retention = again.json()["fact"]["retention"]
    assert (retention["keep_days"], retention["legal_hold"]) == (30, True)
    assert api.delete(f"/v1/facts/{fact['id']}", **world.admin.headers).status_code == 409


@pytest.mark.parametrize(
    ("held", "weaker"),
    [
        ({"legal_hold": True}, {"legal_hold": False}),
        ({"keep_days": 30}, {"keep_days": 1}),
        ({"keep_until": "2099-01-01T00:00:00Z"}, {"keep_until": "2030-01-01T00:00:00Z"}),
    ],
    ids=["legal_hold", "keep_days", "keep_until"],
)
def test_only_an_admin_or_a_privacy_officer_weakens_a_facts_retention(api, world, held, weaker):
    # given: a fact in the app's project under retention, written by the admin
    from django.contrib.auth.models import Group

    from kindmem.access import PRIVACY_OFFICER_GROUP

    scope = {"project_id": str(world.project.id)}
    fact = create(api, world.admin, scope=scope, retention=held).json()["fact"]
    url = f"/v1/facts/{fact['id']}/supersede"
    body = {"content": fact["content"], "retention": weaker}
    # when: the app key (which may write the fact) tries to weaken it, and then to delete it
    refused = api.post(url, body, format="json", **world.app.headers)
    # then: 403 naming the field, nothing written, and the fact still may not be deleted
    assert refused.status_code == 403, refused.json()
    assert refused.json()["code"] == "forbidden"
    assert set(refused.json()["details"]) == set(weaker)
    assert Revision.objects.filter(fact_id=fact["id"]).count() == 1
    gone = api.delete(f"/v1/facts/{fact['id']}", **world.app.headers)
    assert gone.status_code == 409
    # and stronger terms are anyone's who may write: the app key adds a legal hold
    stronger = {"content": fact["content"], "retention": {**held, "legal_hold": True}}
    if held != {"legal_hold": True}:
        assert api.post(url, stronger, format="json", **world.app.headers).status_code == 201
    # and a privacy officer's user key, or the admin's, may weaken them
    Group.objects.get_or_create(name=PRIVACY_OFFICER_GROUP)[0].user_set.add(world.user)
    lifted = api.post(
        url,
        {**body, "retention": {**weaker, "legal_hold": False}},
        format="json",
        **world.user_key.headers,
    )
    assert lifted.status_code in {200, 201}, lifted.json()
