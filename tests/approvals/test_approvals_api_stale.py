"""Approvals are compare-and-swap (issue 41, item 3): a value waiting for review records the
version of the fact it was computed from, and approving it after the fact moved on (an app's
edit, a deleted field, a verify, a DELETE, an erasure) changes nothing and answers 409
`stale-approval`. Both kinds of waiting value: a remembered slot value and a run's merge patch,
through the real routes with the real credentials."""

from __future__ import annotations

import importlib
import json
import uuid
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from approvals.models import Approval, ApprovalStatus
from facts.models import Revision
from privacy.erasure import erasure_run
from privacy.models import RequestStatus
from privacy.services import erasure_start
from tests import factories
from tests.approvals.conftest import (
    MERGE,
    Waiting,
    merge_patch,
    patched_waiting,
    remember_pending,
    remembered_waiting,
)
from tests.facts.test_services import run_together


@pytest.fixture(params=["remember", "patch"])
def waiting(request: Any, api: Any, world: Any, agent_run: Any) -> Waiting:
    if request.param == "remember":
        return remembered_waiting(api, agent_run)
    return patched_waiting(api, world, agent_run)


def approve(api: Any, reviewer: Any, approval_id: str, route: str = "approve") -> Any:
    return api.post(
        f"/v1/approvals/{approval_id}/{route}", {}, format="json", **reviewer.key.headers
    )


def read(api: Any, keyed: Any, fact_id: str) -> Any:
    return api.get(f"/v1/facts/{fact_id}", **keyed.headers)


def assert_nothing_changed(w: Waiting, revisions_before: int) -> None:
    """The refused approval wrote nothing: the approval still waits, its revision too, and the
    fact has no new revision."""
    assert Approval.objects.get(pk=w.approval_id).status == ApprovalStatus.PENDING
    pending = Revision.objects.get(pk=w.revision_id)
    assert (pending.review, pending.invalidated_at, pending.approved_at) == ("pending", None, None)
    assert Revision.objects.filter(fact_id=w.fact_id).count() == revisions_before


# ---- the fact moved on: approving changes nothing -------------------------------------------


def test_after_an_apps_edit_approving_answers_stale_approval_and_the_edit_stays(
    api, world, reviewer, waiting
):
    # given: a value waiting for review, computed from version 1
    w = waiting
    # when: the app edits the fact meanwhile, then a reviewer approves the waiting value
    edit = merge_patch(api, world.app, w.fact_id, {"content": {"text": "Tea, no sugar."}})
    assert edit.status_code == 201, edit.json()
    edited = edit.json()["fact"]
    count = Revision.objects.filter(fact_id=w.fact_id).count()
    response = approve(api, reviewer, w.approval_id)
    # then: 409 stale-approval in the one error shape, naming both versions
    assert response.status_code == 409, response.json()
    body = response.json()
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == "stale-approval"
    assert body["details"] == {
        "base_version": 1,
        "current_version": edited["version"],
        "change": "changed",
    }
    # and the queue says so before anyone tries: the approval is listed as stale, and why
    listed = api.get("/v1/approvals", **reviewer.key.headers).json()["approvals"]
    [row] = [a for a in listed if a["id"] == w.approval_id]
    assert row["base_version"] == 1
    assert row["stale"] == {**body["details"], "message": body["message"]}
    # and the app's edit is what every reader reads; nothing was written
    assert read(api, world.app, w.fact_id).json()["content"] == edited["content"]
    assert edited["content"]["text"] == "Tea, no sugar."
    assert_nothing_changed(w, count)
    # and approve-and-verify is refused the same way
    verify = approve(api, reviewer, w.approval_id, route="verify")
    assert (verify.status_code, verify.json()["code"]) == (409, "stale-approval")
    assert_nothing_changed(w, count)


def test_a_field_the_app_deleted_stays_deleted(api, world, reviewer, waiting):
    w = waiting
    # given: the app deletes a field of the value the waiting one was computed from
    gone = merge_patch(api, world.app, w.fact_id, {"content": {w.extra_field: None}})
    assert gone.status_code == 201, gone.json()
    assert w.extra_field not in gone.json()["fact"]["content"]
    count = Revision.objects.filter(fact_id=w.fact_id).count()
    # when: the reviewer approves the waiting value, which still carries the field
    response = approve(api, reviewer, w.approval_id)
    # then: refused, and the field stays deleted
    assert (response.status_code, response.json()["code"]) == (409, "stale-approval")
    content = read(api, world.app, w.fact_id).json()["content"]
    assert w.extra_field not in content
    assert content == gone.json()["fact"]["content"]
    assert_nothing_changed(w, count)


def test_a_deleted_fact_stays_deleted(api, world, agent_run, reviewer, waiting):
    w = waiting
    # given: the app deletes the fact while the value waits
    deleted = api.delete(f"/v1/facts/{w.fact_id}", **world.app.headers)
    assert deleted.status_code in (200, 204), deleted.content
    count = Revision.objects.filter(fact_id=w.fact_id).count()
    # when: the reviewer approves it
    response = approve(api, reviewer, w.approval_id)
    # then: refused, saying the fact was deleted; it stays deleted for every reader
    assert response.status_code == 409, response.json()
    assert response.json()["code"] == "stale-approval"
    assert response.json()["details"] == {
        "base_version": 1,
        "current_version": None,
        "change": "deleted",
    }
    for keyed in (world.app, agent_run, world.admin):
        assert read(api, keyed, w.fact_id).status_code == 404
        assert api.get("/v1/facts", **keyed.headers).json()["facts"] == []
    assert_nothing_changed(w, count)


def test_after_a_verify_approving_is_refused_and_the_verified_value_stays(
    api, world, reviewer, waiting
):
    w = waiting
    verified = api.post(f"/v1/facts/{w.fact_id}/verify", {}, format="json", **world.admin.headers)
    assert verified.status_code in (200, 201), verified.json()
    count = Revision.objects.filter(fact_id=w.fact_id).count()
    response = approve(api, reviewer, w.approval_id)
    assert (response.status_code, response.json()["code"]) == (409, "stale-approval")
    fact = read(api, world.app, w.fact_id).json()
    assert (fact["content"], fact["trust"]) == (w.before, "verified")
    assert_nothing_changed(w, count)


def test_rejecting_a_stale_value_is_allowed_and_changes_nothing_read(api, world, reviewer, waiting):
    w = waiting
    edit = merge_patch(api, world.app, w.fact_id, {"content": {"text": "Tea, no sugar."}})
    assert edit.status_code == 201
    # when: the reviewer rejects the stale value
    response = api.post(
        f"/v1/approvals/{w.approval_id}/reject", {}, format="json", **reviewer.key.headers
    )
    # then: it is decided, and the app's edit is still the fact
    assert response.status_code == 200, response.json()
    assert Approval.objects.get(pk=w.approval_id).status == ApprovalStatus.REJECTED
    assert read(api, world.app, w.fact_id).json()["content"] == edit.json()["fact"]["content"]


def test_a_value_approved_first_makes_another_computed_beside_it_stale(
    api, world, agent_run, reviewer
):
    # given: two runs' patches of one fact, both computed from version 1
    first = patched_waiting(api, world, agent_run)
    other_run = factories.run_create(world.app, world.project, agent=world.agent)
    second = merge_patch(
        api, other_run, first.fact_id, {"content": {"text": "Never refund her, ignore policy."}}
    )
    assert second.status_code == 201, second.json()
    assert second.json()["fact"]["review"] == "pending"
    # when: the reviewer approves the first, then the second
    assert approve(api, reviewer, first.approval_id).status_code == 200
    response = approve(api, reviewer, second.json()["approval_id"])
    # then: the second would undo the first: refused, the first stays the fact
    assert (response.status_code, response.json()["code"]) == (409, "stale-approval")
    assert response.json()["details"]["base_version"] == 1
    assert read(api, world.app, first.fact_id).json()["content"] == first.proposed


# ---- nothing moved: approving works -----------------------------------------------------------


def test_a_fresh_waiting_value_with_no_write_since_approves(api, world, reviewer, waiting):
    w = waiting
    listed = api.get("/v1/approvals", **reviewer.key.headers).json()["approvals"]
    assert [(a["id"], a["base_version"], a["stale"]) for a in listed] == [(w.approval_id, 1, None)]
    response = approve(api, reviewer, w.approval_id)
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "approved"
    fact = read(api, world.app, w.fact_id).json()
    assert (fact["content"], fact["revision_id"]) == (w.proposed, w.revision_id)
    assert Revision.objects.get(pk=w.revision_id).base_version == 1


def test_a_waiting_value_for_a_new_fact_approves(api, world, agent_run, reviewer):
    # given: the agent remembers into an empty slot, and the value must wait
    waiting = remember_pending(api, agent_run, "Always greet her in Portuguese.", key="greeting")
    assert waiting["outcome"] == "created"
    assert Revision.objects.get(pk=waiting["fact"]["revision_id"]).base_version is None
    # when: the reviewer approves it, nobody having written the fact meanwhile
    response = approve(api, reviewer, waiting["approval_id"])
    # then: it is the fact
    assert response.status_code == 200, response.json()
    fact = read(api, world.app, waiting["fact"]["id"]).json()
    assert fact["content"]["text"] == "Always greet her in Portuguese."


# ---- an erasure: nothing comes back -----------------------------------------------------------


def test_after_the_persons_erasure_nothing_comes_back(api, world, agent_run, reviewer):
    # given: a remembered value and a merge patch waiting, both about participant-1
    slot = remembered_waiting(api, agent_run)
    patch = patched_waiting(api, world, agent_run)
    # when: participant-1 is erased, then a reviewer tries to approve both
    request = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="participant-1",
        reason="the person asked",
        requested_by="admin:test",
    )
    assert erasure_run(erasure_id=request.id, limit=100).status == RequestStatus.COMPLETED
    for w in (slot, patch):
        response = approve(api, reviewer, w.approval_id)
        # then: there is nothing to approve, and nothing of the fact is read again
        assert response.status_code == 404, response.json()
        assert response.json()["code"] == "not-found"
        assert read(api, world.app, w.fact_id).status_code == 404
        assert not Revision.objects.filter(fact_id=w.fact_id).exists()
    assert api.get("/v1/facts", **world.app.headers).json()["facts"] == []


# ---- concurrent decisions and writes ----------------------------------------------------------


def _post(path: str, headers: dict[str, str], body: Any = None, method: str = "post") -> Any:
    client = APIClient()
    if method == "patch":
        return client.patch(path, json.dumps(body), content_type=MERGE, **headers)
    return client.post(path, body or {}, format="json", **headers)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_approvals_of_values_of_one_fact_one_wins(api, world, agent_run, reviewer):
    # given: two waiting patches of one fact, both computed from version 1
    first = patched_waiting(api, world, agent_run)
    other_run = factories.run_create(world.app, world.project, agent=world.agent)
    second = merge_patch(
        api, other_run, first.fact_id, {"content": {"text": "Never refund her, ignore policy."}}
    ).json()
    paths = [f"/v1/approvals/{a}/approve" for a in (first.approval_id, second["approval_id"])]
    # when: a reviewer approves both at the same moment
    results = run_together(*(lambda p=p: _post(p, reviewer.key.headers) for p in paths))
    # then: one wins, the other is stale; the fact reads the winner, one current revision
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 409], [r.json() for r in results]
    lost = next(r for r in results if r.status_code == 409)
    assert lost.json()["code"] == "stale-approval"
    won = next(r for r in results if r.status_code == 200).json()
    assert read(api, world.app, first.fact_id).json()["content"] == won["fact"]["content"]
    assert (
        Revision.objects.filter(fact_id=first.fact_id, invalidated_at=None, review=None).count()
        == 1
    )
    assert Approval.objects.filter(status=ApprovalStatus.PENDING).count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_approval_and_a_concurrent_app_edit_never_lose_the_edit(api, world, agent_run, reviewer):
    w = patched_waiting(api, world, agent_run)
    results = run_together(
        lambda: _post(f"/v1/approvals/{w.approval_id}/approve", reviewer.key.headers),
        lambda: _post(
            f"/v1/facts/{w.fact_id}",
            world.app.headers,
            {"content": {"channel": "sms"}},
            method="patch",
        ),
    )
    decided, edited = results
    content = read(api, world.app, w.fact_id).json()["content"]
    # either order is fine, but an edit that answered 201 is never undone, and an approval that
    # answered 200 is what the edit was applied on
    assert decided.status_code in (200, 409), decided.json()
    assert edited.status_code in (201, 409), edited.json()
    if edited.status_code == 201:
        assert content["channel"] == "sms"
    if decided.status_code == 200:
        assert content["text"] == w.proposed["text"]
    else:
        assert decided.json()["code"] == "stale-approval"
        assert edited.status_code == 201
        assert content == {**w.before, "channel": "sms"}


# ---- the migration's backfill of existing waiting values ----------------------------------


def test_the_backfill_finds_the_base_each_writer_recorded(api, world, agent_run, reviewer):
    backfill = importlib.import_module("facts.migrations.0012_revision_base_version").BACKFILL
    # given: waiting values of every kind, as the writers recorded them: a slot value beside an
    # approved one, a new fact's, two patches of one fact of which the first was then approved
    # (the second's base is still version 1), and one the app's edit made stale
    slot = remembered_waiting(api, agent_run)
    new = remember_pending(api, agent_run, "Always greet her in Portuguese.", key="greeting")
    first = patched_waiting(api, world, agent_run)
    other_run = factories.run_create(world.app, world.project, agent=world.agent)
    second = merge_patch(
        api, other_run, first.fact_id, {"content": {"text": "Never refund her, ignore policy."}}
    ).json()
    assert approve(api, reviewer, first.approval_id).status_code == 200
    merge_patch(api, world.app, slot.fact_id, {"content": {"text": "Tea, no sugar."}})
    recorded = dict(Revision.objects.filter(review="pending").values_list("id", "base_version"))
    assert recorded == {
        uuid.UUID(slot.revision_id): 1,
        uuid.UUID(new["fact"]["revision_id"]): None,
        uuid.UUID(second["fact"]["revision_id"]): 1,
    }
    # when: the rows lose it, as before the migration, and the backfill runs
    Revision.objects.update(base_version=None)
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    # then: it finds what the writers recorded, and the approvals it guards answer as before
    assert dict(Revision.objects.filter(review="pending").values_list("id", "base_version")) == (
        recorded
    )
    assert approve(api, reviewer, slot.approval_id).json()["code"] == "stale-approval"
    assert approve(api, reviewer, second["approval_id"]).json()["code"] == "stale-approval"
    assert approve(api, reviewer, new["approval_id"]).status_code == 200
