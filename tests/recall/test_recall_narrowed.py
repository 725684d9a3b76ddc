"""Recall narrowed to a caller's readers (`readers` in `POST /v1/recall`'s body): exactly the
messages of conversations both the narrowing and the credential may recall (the recall
guard, twice), before the LIMIT, with every credential kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from recall.models import Conversation, Message
from tests import factories
from tests.recall.conftest import BOT, recall

pytestmark = pytest.mark.django_db

KINDS = ["admin", "app", "user", "run"]
WEAK = [f"where is my parcel {i}" for i in range(3)]
STRONG = [f"parcel refund parcel refund {i}" for i in range(120)]
QUERY = "parcel refund"


def talk(
    world: Any,
    thread_id: str,
    texts: list[str],
    *,
    project: Any = None,
    participant_id: str | None = None,
    user: Any = None,
) -> str:
    """A conversation of the world's agent with these user messages, written to the tables
    (many, fast); its id."""
    conversation = Conversation.objects.create(
        tenant=world.tenant,
        thread_id=thread_id,
        agent=world.agent,
        project=project,
        participant_id=participant_id,
        user=user,
        last_sequence=len(texts),
    )
    Message.objects.bulk_create(
        Message(tenant=world.tenant, conversation=conversation, sequence=n, role="user", text=t)
        for n, t in enumerate(texts, start=1)
    )
    return thread_id


@dataclass
class Narrowed:
    headers: dict[str, str]
    readers: dict[str, list[str]]
    own: str  # the conversation both may recall
    decoys: str  # the credential recalls it, the narrowing does not: 120 newer, better matches
    beyond: set[str]  # the narrowing names them, the credential may not recall them


def narrowed(kind: str, world: Any, other_world: Any) -> Narrowed:
    project = world.project
    elsewhere = factories.project_create(world.tenant, world.org)
    p, e = str(project.id), str(elsewhere.id)
    if kind == "app":  # every end user of its project; narrowed to one
        own = talk(world, "own", WEAK, project=project, participant_id="p1")
        decoys = talk(world, "decoys", STRONG, project=project, participant_id="p2")
        beyond = talk(world, "beyond", STRONG[:10], project=elsewhere, participant_id="p1")
        readers = {"project_ids": [p, e], "participant_ids": ["p1"]}
        return Narrowed(world.app.headers, readers, own, decoys, {beyond})
    if kind == "user":  # its own conversations in its projects; narrowed to one of them
        own = talk(world, "own", WEAK, project=project, user=world.user)
        decoys = talk(world, "decoys", STRONG, project=project, user=world.user)
        beyond = talk(world, "beyond", STRONG[:10], project=project, participant_id="p1")
        readers = {"project_ids": [p], "thread_ids": [own, beyond]}
        return Narrowed(world.user_key.headers, readers, own, decoys, {beyond})
    if kind == "admin":  # the tenant's; narrowed to one project's end user
        own = talk(world, "own", WEAK, project=project, participant_id="p1")
        decoys = talk(world, "decoys", STRONG, project=elsewhere, participant_id="p1")
        other = other_world.project
        talk(other_world, "beyond", STRONG[:10], project=other, participant_id="p1")
        readers = {"project_ids": [p, str(other.id)], "participant_ids": ["p1"]}
        return Narrowed(world.admin.headers, readers, own, decoys, {"beyond"})
    assert kind == "run"  # its end user's conversations; narrowed to one earlier conversation
    run = factories.run_create(world.app, project, participant_id="p1", thread_id="now")
    own = talk(world, "own", WEAK, project=project, participant_id="p1")
    decoys = talk(world, "decoys", STRONG, project=project, participant_id="p1")
    beyond = talk(world, "beyond", STRONG[:10], project=project, participant_id="p2")
    readers = {"project_ids": [p], "thread_ids": [own, beyond]}
    return Narrowed(run.headers, readers, own, decoys, {beyond})


def conversations(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [hit["message"]["conversation_id"] for hit in response.json()["hits"]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["list", "keyword"])
def test_a_narrowed_recall_finds_what_both_may_recall_below_a_hundred_better_hits(
    api, world, other_world, kind, mode
):
    # given: a credential whose 120 newest, best matching messages are outside the narrowing,
    # three older, weaker ones inside it, and conversations the narrowing names beyond it
    case = narrowed(kind, world, other_world)
    query = {} if mode == "list" else {"query": QUERY}
    plain = recall(api, case.headers, selections=BOT, mode=mode, top_k=100, **query)
    assert case.own not in conversations(plain)  # its own top 100: filtering it finds none

    # when: the same recall, narrowed, asks for ten
    response = recall(
        api, case.headers, selections=BOT, mode=mode, top_k=10, readers=case.readers, **query
    )

    # then: the three messages both may recall, and nothing else
    assert conversations(response) == [case.own] * 3, (kind, mode)


@pytest.mark.parametrize("kind", KINDS)
def test_a_narrowing_wider_than_the_credential_never_recalls_beyond_it(
    api, world, other_world, kind
):
    # given: each kind's conversations, and a narrowing naming all of them and `all`
    case = narrowed(kind, world, other_world)
    everything = {
        "project_ids": case.readers["project_ids"],
        "on_behalf_of_project_ids": case.readers["project_ids"],
        "participant_ids": ["p1", "p2"],
        "user_ids": [str(world.user.id)],
        "thread_ids": [case.own, case.decoys, *case.beyond],
    }
    for readers in (everything, {"all": True}):
        # when: it recalls with it
        response = recall(
            api, case.headers, selections=BOT, mode="list", top_k=100, readers=readers
        )
        # then: nothing beyond the credential's own readers
        assert not set(conversations(response)) & case.beyond, (kind, readers)


def test_no_readers_at_all_recall_nothing(api, world):
    # given: an app's end user's conversation
    talk(world, "own", WEAK, project=world.project, participant_id="p1")
    # when: the app recalls narrowed to no readers (the seed's absent `readers`)
    response = recall(api, world.app.headers, selections=BOT, mode="list", top_k=10, readers={})
    # then: nothing (a conversation is always someone's)
    assert conversations(response) == []


def test_bad_readers_in_a_recall_are_a_400(api, world):
    response = recall(
        api, world.app.headers, selections=BOT, mode="list", readers={"project_ids": ["x"]}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert "project_ids" in response.json()["details"]["readers"]
