"""approvals.erasure.erase_batch: the review records about a person, in batches."""

from __future__ import annotations

from approvals.erasure import erase_batch
from approvals.models import Approval
from privacy.erasure import ErasureTarget
from tests import factories
from tests.approvals.conftest import remember


def test_erase_batch_removes_the_persons_approvals_in_batches_and_no_one_elses(
    api, world, agent_run
):
    for i in range(3):
        remember(api, agent_run, text=f"Always thing {i}.")
    someone_else = factories.run_create(
        world.app, world.project, participant_id="p-2", thread_id="thread-2"
    )
    kept = remember(api, someone_else, text="Never thing.").json()["approval_id"]
    target = ErasureTarget(world.tenant.id, "participant", "participant-1")
    # when the erasure runs its approvals step with batches of two
    first = erase_batch(target, 2)
    second = erase_batch(target, 2)
    # then it erased three, reported them, finished, and kept the other person's
    assert len(first.erased) == 2
    assert not first.done
    assert len(second.erased) == 1
    assert second.done
    assert all(item.startswith("approval:") for item in first.erased + second.erased)
    assert [str(a.id) for a in Approval.objects.all()] == [kept]
    assert erase_batch(target, 2).done


def test_erase_batch_finds_approvals_about_a_user_and_a_conversation(api, world, agent_run):
    run = factories.run_create(
        world.app, world.project, participant_id=None, thread_id="t-9", user=world.user
    )
    remember(api, run, type="profile", text="Always cc her boss.")
    remember(api, run, type="note", text="Never upsell.")
    assert erase_batch(ErasureTarget(world.tenant.id, "user", str(world.user.id)), 10).erased
    assert Approval.objects.count() == 0
    remember(api, run, type="note", text="Never upsell again.")
    assert erase_batch(ErasureTarget(world.tenant.id, "conversation", "t-9"), 10).done
    assert Approval.objects.count() == 0


def test_erase_batch_never_crosses_tenants(api, world, other_world, agent_run):
    remember(api, agent_run, text="Always thing.")
    result = erase_batch(ErasureTarget(other_world.tenant.id, "participant", "participant-1"), 10)
    assert result.erased == []
    assert result.done
    assert Approval.objects.count() == 1


def test_a_replayed_remember_of_a_person_under_erasure_answers_erasure_in_progress(
    api, world, agent_run
):
    # given: a memory the run remembered, then an erasure of its person began
    first = remember(api, agent_run, text="She takes her zqheld tea black.", tool_call_id="c-1")
    assert first.status_code == 201
    factories.hold_create(world.tenant, "participant", "participant-1")
    # when: the same tool call is replayed
    replay = remember(api, agent_run, text="She takes her zqheld tea black.", tool_call_id="c-1")
    # then: the held person's text is not answered back; the erasure is
    assert replay.status_code == 409
    assert replay.json()["code"] == "erasure-in-progress"
    assert "zqheld" not in replay.content.decode()
