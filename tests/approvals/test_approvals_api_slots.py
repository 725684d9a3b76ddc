"""GET /v1/approvals and the decisions on a slot (a fact's key): a new value closes
the older pending one, the approved value stays current while its successor waits (issue 13,
hole 10), and a run never replaces a verified value on its own (hole 4)."""

from __future__ import annotations

from datetime import timedelta

from approvals.models import Approval, ApprovalStatus
from facts.models import Revision
from tests.approvals.conftest import listed_texts, remember, remember_pending


def test_a_new_slot_value_closes_the_older_pending_approval(api, world, agent_run, reviewer):
    first = remember_pending(api, agent_run, "Always call her Maria.", key="name")
    # when the agent writes a new value for the slot before anyone decided
    second = remember(api, agent_run, text="Goes by Mia.", key="name").json()
    # then the older approval closes as superseded and the new value is read
    assert second["outcome"] == "superseded"
    assert Approval.objects.get(pk=first["approval_id"]).status == ApprovalStatus.SUPERSEDED
    assert api.get("/v1/approvals", **reviewer.key.headers).json()["approvals"] == []
    assert listed_texts(api, world.app.headers) == ["Goes by Mia."]
    response = api.post(
        f"/v1/approvals/{first['approval_id']}/approve",
        {},
        format="json",
        **reviewer.key.headers,
    )
    assert response.status_code == 409


def test_after_a_rejection_the_slot_starts_a_new_fact(api, world, agent_run, reviewer):
    rejected = remember_pending(api, agent_run, "Always call her Maria.", key="name")
    api.post(
        f"/v1/approvals/{rejected['approval_id']}/reject",
        {},
        format="json",
        **reviewer.key.headers,
    )
    # when the agent fills the slot again
    again = remember(api, agent_run, text="Goes by Mia.", key="name").json()
    # then it is a new fact: the rejected value is never continued
    assert again["outcome"] == "created"
    assert again["fact"]["id"] != rejected["fact"]["id"]
    assert listed_texts(api, world.app.headers) == ["Goes by Mia."]


# ---- issue 13, hole 10: the approved value stays current while its successor waits --------


def _read(api, headers, fact_id):
    response = api.get(f"/v1/facts/{fact_id}", **headers)
    assert response.status_code == 200, response.json()
    return response.json()


def test_hole_10_the_approved_value_stays_readable_while_a_new_one_waits(
    api, world, agent_run, reviewer
):
    # given: an approved value for a slot, and a new value for it that must wait
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    waiting = remember_pending(api, agent_run, "Always serve her coffee.", key="drink")
    assert waiting["outcome"] == "superseded"
    assert waiting["fact"]["id"] == kept["fact"]["id"]

    # then: every reader still reads the approved value, as the fact's current revision
    for headers in (world.app.headers, agent_run.headers):
        fact = _read(api, headers, kept["fact"]["id"])
        assert (fact["revision_id"], fact["content"]["text"]) == (
            kept["fact"]["revision_id"],
            "Prefers tea.",
        )
        assert listed_texts(api, headers) == ["Prefers tea."]
    assert Revision.objects.get(pk=kept["fact"]["revision_id"]).invalidated_at is None

    # when: the reviewer rejects the new value
    rejected = api.post(
        f"/v1/approvals/{waiting['approval_id']}/reject", {}, format="json", **reviewer.key.headers
    )

    # then: the approved value is still the fact, and its history is unchanged
    assert rejected.status_code == 200, rejected.json()
    assert _read(api, world.app.headers, kept["fact"]["id"])["content"]["text"] == "Prefers tea."
    history = api.get(f"/v1/facts/{kept['fact']['id']}/revisions", **world.app.headers).json()
    assert [(r["version"], r["invalidation_reason"]) for r in history["revisions"]] == [(1, None)]
    # and the slot carries on from the approved value
    next_value = remember(api, agent_run, text="Prefers green tea.", key="drink").json()
    assert (next_value["outcome"], next_value["fact"]["id"]) == ("superseded", kept["fact"]["id"])
    assert next_value["fact"]["supersedes"] == kept["fact"]["revision_id"]


def test_hole_10_approving_the_new_value_supersedes_the_approved_one(
    api, world, agent_run, reviewer
):
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    waiting = remember_pending(api, agent_run, "Always serve her coffee.", key="drink")

    # when: the reviewer approves the new value
    approved = api.post(
        f"/v1/approvals/{waiting['approval_id']}/approve", {}, format="json", **reviewer.key.headers
    )

    # then: it is the fact's current revision, superseding the approved one
    assert approved.status_code == 200, approved.json()
    fact = _read(api, world.app.headers, kept["fact"]["id"])
    assert fact["content"]["text"] == "Always serve her coffee."
    assert fact["revision_id"] == waiting["fact"]["revision_id"]
    assert fact["supersedes"] == kept["fact"]["revision_id"]
    history = api.get(f"/v1/facts/{kept['fact']['id']}/revisions", **world.app.headers).json()
    assert [(r["content"]["text"], r["invalidation_reason"]) for r in history["revisions"]] == [
        ("Always serve her coffee.", None),
        ("Prefers tea.", "superseded"),
    ]
    old = Revision.objects.get(pk=kept["fact"]["revision_id"])
    assert old.invalidated_by == f"user:{reviewer.user.id}"
    # and as of a moment before the approval, the approved value is what kindmem held
    before = old.invalidated_at - timedelta(microseconds=1)
    as_of = api.get("/v1/facts", {"as_of": before.isoformat()}, **world.app.headers).json()
    assert [f["content"]["text"] for f in as_of["facts"]] == ["Prefers tea."]


def test_hole_10_approving_and_verifying_the_new_value_also_works(api, world, agent_run, reviewer):
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    waiting = remember_pending(api, agent_run, "Always serve her coffee.", key="drink")
    response = api.post(
        f"/v1/approvals/{waiting['approval_id']}/verify", {}, format="json", **reviewer.key.headers
    )
    assert response.status_code == 200, response.json()
    fact = _read(api, world.app.headers, kept["fact"]["id"])
    assert (fact["content"]["text"], fact["trust"]) == ("Always serve her coffee.", "verified")
    assert Revision.objects.filter(fact_id=kept["fact"]["id"], invalidated_at=None).count() == 1


def test_hole_10_a_second_new_value_closes_the_first_and_keeps_the_approved_one(
    api, world, agent_run, reviewer
):
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    first = remember_pending(api, agent_run, "Always serve her coffee.", key="drink")
    second = remember_pending(api, agent_run, "Never serve her milk.", key="drink")
    assert Approval.objects.get(pk=first["approval_id"]).status == ApprovalStatus.SUPERSEDED
    assert _read(api, world.app.headers, kept["fact"]["id"])["content"]["text"] == "Prefers tea."
    api.post(
        f"/v1/approvals/{second['approval_id']}/approve", {}, format="json", **reviewer.key.headers
    )
    fact = _read(api, world.app.headers, kept["fact"]["id"])
    assert (fact["content"]["text"], fact["supersedes"]) == (
        "Never serve her milk.",
        kept["fact"]["revision_id"],
    )


def test_hole_10_an_app_may_supersede_the_approved_value_while_a_new_one_waits(
    api, world, agent_run, reviewer
):
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    waiting = remember_pending(api, agent_run, "Always serve her coffee.", key="drink")
    fact_id = kept["fact"]["id"]
    # when: an app writes the fact's next revision meanwhile
    by_app = api.post(
        f"/v1/facts/{fact_id}/supersede",
        {"content": "Tea, no sugar."},
        format="json",
        **world.app.headers,
    )
    # then: it lands at once, beside the value still waiting, and approving that value now
    # would undo the app's write: refused (test_approvals_api_stale.py), the app's value stays
    assert by_app.status_code == 201, by_app.json()
    assert _read(api, world.app.headers, fact_id)["content"] == "Tea, no sugar."
    response = api.post(
        f"/v1/approvals/{waiting['approval_id']}/approve", {}, format="json", **reviewer.key.headers
    )
    assert (response.status_code, response.json()["code"]) == (409, "stale-approval")
    assert _read(api, world.app.headers, fact_id)["content"] == "Tea, no sugar."


def test_hole_4_a_run_never_replaces_a_verified_slot_value_on_its_own(
    api, world, agent_run, reviewer
):
    # given: a slot whose value a person verified
    kept = remember(api, agent_run, text="Prefers tea.", key="drink").json()
    verified = api.post(
        f"/v1/facts/{kept['fact']['id']}/verify", {}, format="json", **world.admin.headers
    )
    assert verified.status_code in (200, 201), verified.json()
    verified_revision = verified.json()["fact"]["revision_id"]
    # when: the agent remembers a plain new value for the slot
    new = remember(api, agent_run, text="Prefers coffee.", key="drink").json()
    # then: it waits for a reviewer, and the verified value stays what every reader reads
    assert new["approval_id"] is not None
    assert "verified-slot" in new["review"]["reasons"]
    fact = _read(api, agent_run.headers, kept["fact"]["id"])
    assert (fact["revision_id"], fact["trust"]) == (verified_revision, "verified")
    # and once a reviewer approves it, it replaces the verified value
    approved = api.post(
        f"/v1/approvals/{new['approval_id']}/approve", {}, format="json", **reviewer.key.headers
    )
    assert approved.status_code == 200, approved.json()
    assert _read(api, agent_run.headers, kept["fact"]["id"])["content"]["text"] == "Prefers coffee."
