from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests import factories

MESSAGES_URL = "conversation-messages"


def messages_url(conversation_id: str) -> str:
    return reverse(MESSAGES_URL, kwargs={"conversation_id": conversation_id})


def messages_post(
    api: APIClient,
    headers: dict[str, str],
    conversation_id: str,
    *messages: tuple[str, str],
    **body: Any,
) -> Any:
    """POST a batch of (role, text) messages to the conversation through the API; returns the
    response."""
    payload = {"messages": [{"role": r, "text": t} for r, t in messages], **body}
    return api.post(messages_url(conversation_id), payload, format="json", **headers)


def recall(api: APIClient, headers: dict[str, str], **body: Any) -> Any:
    return api.post(reverse("recall"), body, format="json", **headers)


@pytest.fixture
def run(world: Any) -> factories.Minted:
    """A run of the world's agent for end user 'cust-1' in conversation 'conv-1'."""
    return factories.run_create(
        world.app, world.project, participant_id="cust-1", thread_id="conv-1"
    )


@pytest.fixture
def hashing_embedder(settings: Any) -> None:
    settings.EMBEDDER = "hashing"


def conversation_create(
    world: Any,
    thread_id: str,
    *messages: tuple[str, str],
    participant_id: str | None = None,
    user: Any = None,
    project: Any = None,
    agent_id: str = "support-bot",
    segments: tuple[str, ...] = (),
) -> Any:
    """A conversation with `messages` (role, text), written through the append service as the
    world's app (acting for `project`, by default the world's); a Kindgi `user`'s own, as a run
    that user's key minted (an app names no Kindgi user). Naming both an end user and a user
    is what no credential may write any more: that one is stored as such data was before."""
    from kindmem.models import Agent
    from recall import services
    from recall.models import Conversation, Message

    project = project or world.project
    key = (
        world.app if project == world.project else factories.app_key_create(world.tenant, [project])
    )
    agent = Agent.objects.get(tenant_id=world.tenant.id, agent_id=agent_id)
    if user is not None and participant_id is not None:
        conversation = Conversation.objects.create(
            tenant_id=world.tenant.id,
            thread_id=thread_id,
            agent=agent,
            project=project,
            participant_id=participant_id,
            user=user,
            segments=list(segments),
            last_sequence=len(messages),
        )
        Message.objects.bulk_create(
            Message(
                tenant_id=world.tenant.id, conversation=conversation, sequence=i, role=r, text=t
            )
            for i, (r, t) in enumerate(messages, start=1)
        )
        return conversation
    principal = key.principal
    start = services.ConversationStart(
        agent_id=agent_id,
        project_id=project.id,
        participant_id=participant_id,
        segments=segments,
    )
    if user is not None:
        minted = factories.run_create(key, project, agent=agent, user=user, thread_id=thread_id)
        principal, start = minted.principal, services.ConversationStart(segments=segments)
    conversation, _ = services.conversation_append(
        principal=principal,
        conversation_id=thread_id,
        messages=[services.NewMessage(role, text) for role, text in messages],
        start=start,
    )
    return conversation


def texts(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [hit["message"]["text"] for hit in response.json()["hits"]]


BOT = [{"agent_id": "support-bot"}]


@pytest.fixture
def history(world):
    """Two earlier conversations of end user cust-1 and one of cust-2, in the world's project."""
    conversation_create(
        world,
        "c1",
        ("user", "My parcel never arrived"),
        ("agent", "Sorry, I will open a refund"),
        ("tool", "refund_open(parcel)"),
        ("user", "Thanks, the refund is fine"),
        participant_id="cust-1",
        segments=("acme", "emea"),
    )
    conversation_create(
        world,
        "c2",
        ("user", "How do I reset my password"),
        ("agent", "Use the reset link"),
        participant_id="cust-1",
        segments=("acme", "us"),
    )
    conversation_create(
        world,
        "c3",
        ("user", "I want a refund for my shoes"),
        participant_id="cust-2",
        segments=("globex",),
    )
