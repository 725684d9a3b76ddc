"""Recalling earlier conversations (POST /v1/recall): the roles a recall asks for and the
neighbours its hits carry, and the selections that narrow it."""

from __future__ import annotations

import pytest

from tests import factories
from tests.recall.conftest import BOT, conversation_create, recall, texts

# ---- roles and neighbours --------------------------------------------------------------


def test_hits_carry_their_neighbours_of_the_requested_roles(api, world, history):
    # given the default roles (user only): neighbours are the user's own messages
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c1"}],
        mode="list",
        top_k=10,
    )
    hits = {h["message"]["text"]: h["message"] for h in response.json()["hits"]}
    assert hits["Thanks, the refund is fine"]["before"] == {
        "role": "user",
        "text": "My parcel never arrived",
    }
    assert hits["Thanks, the refund is fine"]["after"] is None
    assert hits["My parcel never arrived"]["before"] is None


def test_recalling_agent_messages_too_makes_them_hits_and_neighbours_but_never_tool_ones(
    api, world, history
):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c1"}],
        mode="list",
        roles=["user", "agent"],
        top_k=10,
    )
    hits = {h["message"]["text"]: h["message"] for h in response.json()["hits"]}
    assert set(hits) == {
        "My parcel never arrived",
        "Sorry, I will open a refund",
        "Thanks, the refund is fine",
    }
    # the tool message between them is skipped
    assert hits["Thanks, the refund is fine"]["before"] == {
        "role": "agent",
        "text": "Sorry, I will open a refund",
    }
    assert hits["Sorry, I will open a refund"]["after"]["text"] == "Thanks, the refund is fine"
    assert hits["Sorry, I will open a refund"]["role"] == "agent"


def test_agent_messages_only(api, world, history):
    response = recall(
        api, world.app.headers, selections=BOT, mode="list", roles=["agent"], top_k=10
    )
    assert texts(response) == ["Use the reset link", "Sorry, I will open a refund"]


def test_a_hit_names_its_conversation_and_containers(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c3"}],
        mode="list",
        top_k=1,
    )
    message = response.json()["hits"][0]["message"]
    assert message["conversation_id"] == "c3"
    assert message["sequence"] == 1
    assert message["role"] == "user"
    assert message["agent_id"] == "support-bot"
    assert message["project_id"] == str(world.project.id)
    assert message["participant_id"] == "cust-2"
    assert message["user_id"] is None
    assert message["created_at"]


# ---- selections ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ({"conversation_id": "c1"}, {"My parcel never arrived", "Thanks, the refund is fine"}),
        ({"conversation_id": "c1", "before_sequence": 4}, {"My parcel never arrived"}),
        (
            {"exclude_conversation_id": "c1"},
            {"How do I reset my password", "I want a refund for my shoes"},
        ),
        (
            {"participant_id": "cust-1"},
            {
                "My parcel never arrived",
                "Thanks, the refund is fine",
                "How do I reset my password",
            },
        ),
        (
            {"participant_id": "cust-1", "exclude_conversation_id": "c1"},
            {"How do I reset my password"},
        ),
        (
            {"segments_prefix": ["acme"]},
            {
                "My parcel never arrived",
                "Thanks, the refund is fine",
                "How do I reset my password",
            },
        ),
        ({"segments_prefix": ["acme", "us"]}, {"How do I reset my password"}),
        ({"segments_prefix": ["acme", "us", "nyc"]}, set()),
        ({"segments_prefix": ["emea"]}, set()),
        ({"participant_id": "nobody"}, set()),
        ({"conversation_id": "nope"}, set()),
    ],
)
def test_each_selection_field_narrows_the_recall(api, world, history, selection, expected):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", **selection}],
        mode="list",
        top_k=50,
    )
    assert set(texts(response)) == expected


def test_selection_by_project_and_user(api, world):
    other_project = factories.project_create(world.tenant, world.org)
    world.app.key.projects.add(other_project)
    conversation_create(world, "a", ("user", "in the main project"), participant_id="p")
    conversation_create(
        world, "b", ("user", "in the other project"), participant_id="p", project=other_project
    )
    conversation_create(world, "c", ("user", "for a kindgi user"), user=world.user)
    by_project = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "project_id": str(other_project.id)}],
        mode="list",
        top_k=10,
    )
    by_user = recall(
        api,
        world.admin.headers,
        selections=[{"agent_id": "support-bot", "user_id": str(world.user.id)}],
        mode="list",
        top_k=10,
    )
    assert texts(by_project) == ["in the other project"]
    assert texts(by_user) == ["for a kindgi user"]


def test_a_selection_is_always_one_agents_conversations(api, world):
    factories.agent_create(world.tenant, agent_id="sales-bot")
    conversation_create(
        world, "s", ("user", "sales talk"), participant_id="p", agent_id="sales-bot"
    )
    conversation_create(world, "h", ("user", "support talk"), participant_id="p")
    response = recall(
        api, world.app.headers, selections=[{"agent_id": "sales-bot"}], mode="list", top_k=10
    )
    assert texts(response) == ["sales talk"]


def test_selections_merge_as_any_of_them(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=[
            {"agent_id": "support-bot", "conversation_id": "c2"},
            {"agent_id": "support-bot", "participant_id": "cust-2"},
        ],
        mode="list",
        top_k=10,
    )
    assert set(texts(response)) == {"How do I reset my password", "I want a refund for my shoes"}
