"""GET /v1/approvals and the decisions: what leaves the queue or is refused (held persons,
roles, bad bodies, unknown ids)."""

from __future__ import annotations

import pytest

from approvals.models import Approval, ApprovalStatus
from facts.models import Revision
from tests import factories
from tests.approvals.conftest import remember_pending


@pytest.mark.parametrize(
    ("kind", "target"),
    [("participant", "participant-1"), ("conversation", "thread-1"), ("external", "crm-1")],
)
def test_hold_a_held_persons_memory_waiting_for_review_leaves_the_queue(
    api, world, agent_run, reviewer, kind, target
):
    # given memories waiting for review: one about participant-1 (in thread-1, about crm-1),
    # one of another end user
    from privacy.services import erasure_start

    held = remember_pending(api, agent_run, "Always send her the zqheld catalogue.")
    Revision.objects.get(pk=held["fact"]["revision_id"]).subjects.create(
        tenant=world.tenant, fact_id=held["fact"]["id"], kind="external", subject_id="crm-1"
    )
    other_run = factories.run_create(
        world.app, world.project, participant_id="p-2", thread_id="t-2"
    )
    other = remember_pending(api, other_run, "Always send him the zqother catalogue.")
    # when an erasure of the person (or of the conversation) is accepted, its worker not yet run
    erasure_start(
        tenant_id=world.tenant.id,
        target_kind=kind,
        target_id=target,
        reason="asked by email",
        requested_by="admin:test",
    )
    # then the queue no longer shows their memory, to a reviewer or an admin, and it cannot be
    # decided (it is not there, like another tenant's); the other person's still can
    for headers in (reviewer.key.headers, world.admin.headers):
        listed = api.get("/v1/approvals", **headers).json()["approvals"]
        assert [a["id"] for a in listed] == [other["approval_id"]]
        for action in ("approve", "reject", "verify"):
            response = api.post(
                f"/v1/approvals/{held['approval_id']}/{action}", {}, format="json", **headers
            )
            assert response.status_code == 404
            assert "zqheld" not in response.content.decode()
    assert Approval.objects.get(pk=held["approval_id"]).status == ApprovalStatus.PENDING
    response = api.post(
        f"/v1/approvals/{other['approval_id']}/approve", {}, format="json", **reviewer.key.headers
    )
    assert response.status_code == 200


def test_only_reviewers_and_tenant_admins_may_review(api, world, agent_run):
    pending = remember_pending(api, agent_run, "Always answer in French.")
    # a Kindgi user outside the reviewer group, an app and a run may not
    for headers in (world.user_key.headers, world.app.headers, agent_run.headers):
        assert api.get("/v1/approvals", **headers).status_code == 403
        response = api.post(
            f"/v1/approvals/{pending['approval_id']}/approve", {}, format="json", **headers
        )
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
    assert Approval.objects.get().status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("reject", {"verify": True}),
        ("approve", {"note": 5}),
        ("approve", {"note": "x" * 2001}),
        ("approve", {"status": "approved"}),
    ],
)
def test_a_bad_decision_body_is_a_validation_error_and_decides_nothing(
    api, agent_run, reviewer, path, body
):
    pending = remember_pending(api, agent_run, "Always answer in French.")
    response = api.post(
        f"/v1/approvals/{pending['approval_id']}/{path}",
        body,
        format="json",
        **reviewer.key.headers,
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert Approval.objects.get().status == ApprovalStatus.PENDING


def test_an_unknown_or_malformed_approval_id_is_not_found(api, reviewer):
    for ident in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        response = api.post(
            f"/v1/approvals/{ident}/approve", {}, format="json", **reviewer.key.headers
        )
        assert response.status_code == 404
