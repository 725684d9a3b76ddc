"""Recalling earlier conversations (POST /v1/recall): who recalls whose conversations (the
recall guard) and held persons' messages."""

from __future__ import annotations

import pytest

from tests import factories
from tests.recall.conftest import BOT, conversation_create, recall, texts

# ---- the guard -------------------------------------------------------------------------


def test_a_run_recalls_its_own_persons_earlier_conversations_and_no_one_elses(api, world, history):
    # given a new run for cust-1, in a new conversation
    minted = factories.run_create(world.app, world.project, participant_id="cust-1", thread_id="c9")
    # when it recalls everything of the agent
    response = recall(api, minted.headers, selections=BOT, mode="list", top_k=10)
    # then it sees cust-1's conversations, never cust-2's
    assert set(texts(response)) == {
        "My parcel never arrived",
        "Thanks, the refund is fine",
        "How do I reset my password",
    }


def test_a_run_without_a_person_recalls_only_its_own_conversation(api, world, history):
    conversation_create(world, "c9", ("user", "anonymous chat"))
    minted = factories.run_create(world.app, world.project, participant_id=None, thread_id="c9")
    response = recall(api, minted.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == ["anonymous chat"]


def test_a_kindgi_user_never_opens_an_end_users_conversation(api, world, history):
    # the user key has the project, but no end user is that user
    conversation_create(world, "mine", ("user", "my own chat"), user=world.user)
    response = recall(api, world.user_key.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == ["my own chat"]


def test_a_conversation_with_an_end_user_is_not_opened_by_the_user_its_turns_acted_for(api, world):
    conversation_create(world, "x", ("user", "cust chat"), participant_id="cust-7", user=world.user)
    response = recall(api, world.user_key.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == []


def test_an_app_recalls_every_end_users_conversations_in_its_projects_only(api, world, history):
    other_project = factories.project_create(world.tenant, world.org)
    conversation_create(
        world, "elsewhere", ("user", "other project"), participant_id="p", project=other_project
    )
    response = recall(api, world.app.headers, selections=BOT, mode="list", top_k=10)
    assert "other project" not in texts(response)
    assert len(texts(response)) == 4


def test_a_tenant_admin_recalls_everything_of_its_tenant_and_nothing_of_another(
    api, world, other_world, history
):
    mine = recall(api, world.admin.headers, selections=BOT, mode="list", top_k=10)
    theirs = recall(api, other_world.admin.headers, selections=BOT, mode="list", top_k=10)
    assert len(texts(mine)) == 4
    assert texts(theirs) == []


def test_the_same_thread_id_in_two_tenants_is_two_conversations(api, world, other_world):
    conversation_create(world, "same", ("user", "tenant one"), participant_id="p")
    conversation_create(other_world, "same", ("user", "tenant two"), participant_id="p")
    response = recall(
        api,
        other_world.admin.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "same"}],
        mode="keyword",
        query="tenant",
        top_k=10,
    )
    assert texts(response) == ["tenant two"]


@pytest.mark.parametrize(("kind", "subject"), [("participant", "cust-2"), ("conversation", "c3")])
def test_messages_of_held_persons_are_never_recalled(api, world, history, kind, subject):
    factories.hold_create(world.tenant, kind, subject)
    response = recall(
        api, world.admin.headers, selections=BOT, mode="keyword", query="refund", top_k=10
    )
    assert texts(response) == ["Thanks, the refund is fine"]


def test_messages_of_a_held_kindgi_user_are_never_recalled(api, world):
    conversation_create(world, "u", ("user", "my own chat"), user=world.user)
    factories.hold_create(world.tenant, "user", str(world.user.id))
    response = recall(api, world.admin.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == []
