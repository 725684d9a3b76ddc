"""What an extraction may show the model and write: only what the credential that asked may
read and write itself. Its run is one that credential could have minted (`acting_for`, the rule
of `POST /v1/runs`): an app key's never names a Kindgi user, so a person's own facts never reach
the model (the prompt is the scripted server's record), its answer, the notes the app reads, or
that person's scope; and a Kindgi user's own conversation is not the app's to extract at all.
The model here echoes every memory it was shown into one it writes, which is what a model
talked into leaking would do."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from extraction.models import ExtractionJob, ExtractionSettings, JobStatus
from facts.services import fact_create
from recall.models import Conversation, Message
from tests import factories
from tests.extraction.chat_server import shown
from tests.extraction.conftest import add, requested, run_task
from tests.recall.conftest import conversation_create, messages_post

pytestmark = pytest.mark.django_db

SECRET = "Is being treated for insomnia."
DECLARATIONS = [
    {"type": "profile", "scope": "user", "keep_days": 90},
    {"type": "preference", "scope": "participant", "keep_days": 90},
    {"type": "note", "scope": "thread", "keep_days": 30},
    {"type": "insight", "scope": "same-project", "keep_days": 365},
]


@pytest.fixture
def person(world: Any) -> Any:
    """The world's agent declares a type of every scope; its Kindgi user has a personal fact
    (which the app key may not read) and a conversation of its own, opened by its own run."""
    world.agent.memory_declarations = DECLARATIONS
    world.agent.save()
    fact_create(
        principal=world.user_key.principal,
        type="profile",
        content={"text": SECRET},
        scope={"user_id": str(world.user.id)},
    )
    mine = factories.run_create(world.app, world.project, user=world.user, thread_id="conv-mine")
    world.mine = mine
    return world


def echo_every_memory(llm: Any, type_: str | None = None) -> None:
    """The model writes back each memory it was shown, as the first type it was offered."""

    def decide(document: dict[str, Any]) -> list[dict[str, Any]]:
        chosen = type_ or document["memory_types"][0]["type"]
        texts = [m["text"] for m in document["existing_memories"]] or ["Nothing was shown."]
        return [add(chosen, f"Echo: {text}", [1]) for text in texts]

    llm.answer(decide)


def extract(api: Any, headers: dict[str, str], conversation_id: str) -> Any:
    path = reverse("conversation-extract", kwargs={"conversation_id": conversation_id})
    return api.post(path, {}, format="json", **headers)


def job_ran(api: Any, headers: dict[str, str], conversation_id: str) -> ExtractionJob:
    response = extract(api, headers, conversation_id)
    assert response.status_code == 202, response.json()
    return run_task(ExtractionJob.objects.get(pk=response.json()["job"]["id"]))


def test_an_app_may_not_extract_a_users_own_conversation(api, llm, person):
    # given the user's own conversation, in a project of the app key
    messages_post(api, person.mine.headers, "conv-mine", ("user", "I sleep badly lately."))
    echo_every_memory(llm)
    # when the app key asks for its extraction, and reads its extractions
    response = extract(api, person.app.headers, "conv-mine")
    notes = api.get(
        reverse("conversation-extract", kwargs={"conversation_id": "conv-mine"}),
        **person.app.headers,
    )
    # then both are not found, as for a conversation that does not exist (an app's key acts for
    # its end users, never a Kindgi user: DESIGN rule 1), and nothing is queued or shown
    missing = extract(api, person.app.headers, "conv-nope")
    assert (response.status_code, response.json()) == (404, missing.json())
    assert notes.status_code == 404
    assert not ExtractionJob.objects.exists()
    assert llm.chats == []


def test_the_users_own_run_asking_shows_the_model_their_facts(api, llm, person):
    # given the same conversation (the control: the fact is there to be shown)
    messages_post(api, person.mine.headers, "conv-mine", ("user", "I sleep badly lately."))
    echo_every_memory(llm, "note")
    # when the user's own run asks
    job = job_ran(api, person.mine.headers, "conv-mine")
    # then the model is shown the user's fact and offered the user's types, and writes as them
    document = shown(llm.chats[0]["json"])
    assert [m["text"] for m in document["existing_memories"]] == [SECRET]
    assert "profile" in {t["type"] for t in document["memory_types"]}
    assert (job.status, job.run.user_id) == (JobStatus.APPLIED, person.user.id)


def test_a_conversation_an_app_opened_for_a_user_before_the_rule_is_not_the_apps(api, llm, person):
    # given a conversation an app opened naming the user, as the service allowed before
    conversation = Conversation.objects.create(
        tenant=person.tenant,
        thread_id="conv-old",
        agent=person.agent,
        project=person.project,
        user=person.user,
        last_sequence=1,
    )
    Message.objects.create(
        tenant=person.tenant,
        conversation=conversation,
        sequence=1,
        role="user",
        text="I sleep badly lately.",
    )
    # when the app asks for its extraction, then it is not found: it is the user's own
    assert extract(api, person.app.headers, "conv-old").status_code == 404
    assert not ExtractionJob.objects.exists()
    assert llm.chats == []


def test_an_apps_append_to_a_users_conversation_queues_no_extraction(api, llm, person):
    # given the user's own conversation, and extraction after each append for its agent
    messages_post(api, person.mine.headers, "conv-mine", ("user", "I sleep badly lately."))
    ExtractionSettings.objects.create(
        tenant=person.tenant, extract_after_append=[person.agent.agent_id]
    )
    ExtractionJob.objects.all().delete()  # the user's own run's append may have queued one
    # when the app appends to it: not found, as a conversation that does not exist
    appended = messages_post(api, person.app.headers, "conv-mine", ("agent", "Noted."))
    assert appended.status_code == 404
    # then nothing was written, nor queued
    assert Message.objects.filter(conversation__thread_id="conv-mine").count() == 1
    assert not ExtractionJob.objects.exists()


def test_a_run_asking_for_another_conversation_of_its_person_gets_no_thread_of_that_one(
    api, llm, declared
):
    # given cust-1's conversation conv-1 with a note of its thread, and a run of cust-1 in
    # another conversation (conv-2): it may recall conv-1, not read conv-1's thread facts
    conversation_create(declared, "conv-1", ("user", "Call me Ana."), participant_id="cust-1")
    fact_create(
        principal=declared.app.principal,
        type="note",
        content={"text": "Thread secret."},
        scope={"project_id": str(declared.project.id), "thread_id": "conv-1"},
    )
    other = factories.run_create(
        declared.app, declared.project, participant_id="cust-1", thread_id="conv-2"
    )
    echo_every_memory(llm)
    # when that run asks for conv-1's extraction
    job = job_ran(api, other.headers, "conv-1")
    # then the model was not shown the thread's note, nor offered the thread's type
    document = shown(llm.chats[0]["json"])
    assert "Thread secret." not in [m["text"] for m in document["existing_memories"]]
    assert "note" not in {t["type"] for t in document["memory_types"]}
    assert (job.status, job.run.participant_id, job.run.thread_id) == (
        JobStatus.APPLIED,
        "cust-1",
        None,
    )


def test_an_apps_extraction_of_its_end_users_conversation_keeps_their_containers(
    api, llm, declared
):
    # given an end user's conversation an app opened (the app stands for the end user)
    conversation_create(declared, "conv-1", ("user", "Email me."), participant_id="cust-1")
    # when the app asks
    job = run_task(requested(declared))
    # then the run is the conversation's, every declared type offered
    assert (job.run.participant_id, job.run.thread_id, job.run.user_id) == (
        "cust-1",
        "conv-1",
        None,
    )
    offered = {t["type"] for t in shown(llm.chats[0]["json"])["memory_types"]}
    assert offered == {"preference", "note", "insight"}
