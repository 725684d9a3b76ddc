"""Appending messages to conversations: POST /v1/conversations/{id}/messages."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from api.errors import Forbidden
from recall.models import Conversation, Message
from recall.tasks import embed_backlog
from tests import factories
from tests.conftest import DEAD_BROKER_WITHIN_SECONDS, publish_warned
from tests.recall.conftest import messages_post, messages_url


def test_a_run_appends_one_message_and_creates_its_conversation_from_the_run(api, world, run):
    # given a run for end user cust-1 in conversation conv-1
    # when it appends a single message
    response = api.post(
        messages_url("conv-1"), {"role": "user", "text": "Hello"}, format="json", **run.headers
    )
    # then the conversation exists with the run's containers, and the message is sequence 1
    assert response.status_code == 201, response.json()
    assert response.json()["conversation_id"] == "conv-1"
    assert [m["sequence"] for m in response.json()["messages"]] == [1]
    conversation = Conversation.objects.get(thread_id="conv-1")
    assert conversation.agent == world.agent
    assert conversation.project == world.project
    assert conversation.participant_id == "cust-1"
    assert conversation.user is None


def test_a_batch_gets_consecutive_sequences_after_the_existing_ones(api, run):
    # given a conversation with one message
    messages_post(api, run.headers, "conv-1", ("user", "first"))
    # when a batch of three is appended
    response = messages_post(
        api, run.headers, "conv-1", ("agent", "a"), ("tool", "t"), ("user", "b")
    )
    # then they follow on, in order
    assert response.status_code == 201
    assert [m["sequence"] for m in response.json()["messages"]] == [2, 3, 4]
    assert list(Message.objects.order_by("sequence").values_list("role", "text")) == [
        ("user", "first"),
        ("agent", "a"),
        ("tool", "t"),
        ("user", "b"),
    ]


def test_a_run_may_not_write_to_another_conversation(api, run):
    response = messages_post(api, run.headers, "someone-elses", ("user", "hi"))
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert not Conversation.objects.exists()


def test_an_app_creates_a_conversation_naming_agent_project_and_person(api, world):
    # when an app appends to a new conversation, naming its containers
    response = messages_post(
        api,
        world.app.headers,
        "conv-app",
        ("user", "hello"),
        agent_id="support-bot",
        project_id=str(world.project.id),
        participant_id="cust-9",
        segments=["acme", "emea"],
    )
    # then the conversation carries them
    assert response.status_code == 201, response.json()
    conversation = Conversation.objects.get(thread_id="conv-app")
    assert (conversation.participant_id, conversation.segments) == ("cust-9", ["acme", "emea"])


def test_an_app_may_not_create_a_conversation_in_a_project_it_does_not_act_in(api, world):
    other_project = factories.project_create(world.tenant)
    response = messages_post(
        api,
        world.app.headers,
        "conv-x",
        ("user", "hello"),
        agent_id="support-bot",
        project_id=str(other_project.id),
    )
    assert response.status_code == 403
    assert not Conversation.objects.exists()


def test_an_app_must_name_agent_and_project_for_a_new_conversation(api, world):
    response = messages_post(api, world.app.headers, "conv-x", ("user", "hello"))
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"
    assert "agent_id and project_id" in response.json()["message"]
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("names", [{}, {"agent_id": "support-bot"}], ids=["nothing", "agent"])
def test_another_projects_conversation_answers_an_app_as_a_missing_one(api, world, names):
    # given conv-q, a conversation of a project the app does not act for
    other_project = factories.project_create(world.tenant)
    other_app = factories.app_key_create(world.tenant, [other_project])
    start = {"agent_id": "support-bot", "project_id": str(other_project.id)}
    assert (
        messages_post(api, other_app.headers, "conv-q", ("user", "hi"), **start).status_code == 201
    )
    # when the app appends to it, and to an id no conversation has, naming the same
    taken = messages_post(api, world.app.headers, "conv-q", ("user", "x"), **names)
    missing = messages_post(api, world.app.headers, "conv-none", ("user", "x"), **names)
    # then both answers are the same 404, and nothing is written
    assert taken.status_code == missing.status_code == 404
    assert taken.json() == missing.json()
    assert taken.json()["code"] == "not-found"
    assert Message.objects.count() == 1
    assert not Conversation.objects.filter(thread_id="conv-none").exists()


@pytest.mark.parametrize("exists", [True, False], ids=["a-user-of-the-tenant", "no-such-user"])
def test_an_app_may_not_name_a_kindgi_user_on_a_conversation(api, world, exists):
    # given a Kindgi user id (a real user of the tenant, or one that names no one)
    user_id = str(world.user.id) if exists else "00000000-0000-4000-8000-000000000001"
    # when an app opens a conversation naming that user
    response = messages_post(
        api,
        world.app.headers,
        "conv-u",
        ("user", "hello"),
        agent_id="support-bot",
        project_id=str(world.project.id),
        user_id=user_id,
    )
    # then it is refused alike (whether the user exists is not told), and nothing is written
    assert response.status_code == 403
    body = response.json()
    assert (set(body), body["code"]) == ({"code", "message", "details"}, "forbidden")
    assert "never for a Kindgi user" in body["message"]
    assert not Conversation.objects.exists()


def test_an_app_may_not_name_a_kindgi_user_on_that_users_own_conversation(api, world):
    # given the user's own conversation, opened by a run the user's key minted
    mine = factories.run_create(world.app, world.project, user=world.user, thread_id="conv-mine")
    assert messages_post(api, mine.headers, "conv-mine", ("user", "hello")).status_code == 201
    # when an app of the project appends to it naming that user
    response = messages_post(
        api, world.app.headers, "conv-mine", ("user", "x"), user_id=str(world.user.id)
    )
    # then it is refused, and nothing is written
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    assert Message.objects.count() == 1


def test_an_app_naming_other_containers_than_the_existing_conversation_is_refused(api, world, run):
    messages_post(api, run.headers, "conv-1", ("user", "hello"))
    response = messages_post(
        api, world.app.headers, "conv-1", ("user", "x"), participant_id="cust-2"
    )
    assert response.status_code == 400
    assert Message.objects.count() == 1


@pytest.mark.parametrize("key", ["admin", "user_key"])
def test_only_runs_and_apps_append_messages(api, world, key):
    response = messages_post(
        api,
        getattr(world, key).headers,
        "conv-x",
        ("user", "hello"),
        agent_id="support-bot",
        project_id=str(world.project.id),
    )
    assert response.status_code == 403
    assert not Conversation.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"role": "user"},
        {"text": "no role"},
        {"role": "system", "text": "unknown role"},
        {"role": "user", "text": ""},
        {"role": "user", "text": "x" * 20_001},
        {"messages": []},
        {"messages": [{"role": "user", "text": "ok"}] * 101},
        {"messages": [{"role": "user", "text": "ok"}, {"role": "bad", "text": "x"}]},
        {"role": "user", "text": "both", "messages": [{"role": "user", "text": "x"}]},
        {"messages": "not a list"},
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(api, run, body):
    response = api.post(messages_url("conv-1"), body, format="json", **run.headers)
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "validation-error"
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("kind", "subject"),
    [("participant", "cust-1"), ("conversation", "conv-1"), ("user", None)],
)
def test_writing_for_a_held_person_is_refused_and_writes_nothing(api, world, kind, subject):
    # given a run acting for an end user (or for a Kindgi user), and an erasure holding them
    # or the conversation
    if kind == "user":
        minted = factories.run_create(
            world.user_key, world.project, user=world.user, thread_id="conv-1"
        )
    else:
        minted = factories.run_create(
            world.app, world.project, participant_id="cust-1", thread_id="conv-1"
        )
    factories.hold_create(world.tenant, kind, subject or str(world.user.id))
    # when the run appends
    response = messages_post(api, minted.headers, "conv-1", ("user", "hello"))
    # then it is refused, and not even the conversation was created
    assert response.status_code == 409
    assert response.json()["code"] == "erasure-in-progress"
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()


def test_messages_are_embedded_on_write_when_an_embedder_is_configured(api, run, hashing_embedder):
    response = messages_post(api, run.headers, "conv-1", ("user", "hello"), ("tool", "{}"))
    assert [m["embedded"] for m in response.json()["messages"]] == [True, False]
    assert Message.objects.get(sequence=1).embedding_model == "kindmem-hashing-v1"


def test_without_an_embedder_messages_are_stored_unembedded(api, run):
    response = messages_post(api, run.headers, "conv-1", ("user", "hello"))
    assert response.status_code == 201
    assert response.json()["messages"][0]["embedded"] is False


def test_a_failing_embedder_stores_the_message_and_leaves_it_for_embed_messages(
    api, run, monkeypatch, hashing_embedder, django_capture_on_commit_callbacks
):
    from embeddings.providers import EmbeddingFailed, HashingEmbedder
    from recall.tasks import embed_messages

    def broken(self, texts):
        raise EmbeddingFailed("down")

    sent: list[list[int]] = []
    monkeypatch.setattr(HashingEmbedder, "embed", broken)
    monkeypatch.setattr(
        embed_messages, "apply_async", lambda args, kwargs, **_: sent.append(args[0])
    )
    # when the embedder fails on write
    with django_capture_on_commit_callbacks(execute=True):
        response = messages_post(api, run.headers, "conv-1", ("user", "hello"), ("tool", "{}"))
    # then the message is stored without a vector and queued (on commit) for the task
    assert response.status_code == 201
    message = Message.objects.get(sequence=1)
    assert message.embedding is None
    assert sent == [[message.id]]
    # and when the embedder is back, the task embeds it, once
    monkeypatch.undo()
    assert embed_messages.run([message.id], tenant_id=str(message.tenant_id)) == 1
    assert embed_messages.run([message.id], tenant_id=str(message.tenant_id)) == 0
    message.refresh_from_db()
    assert message.embedding is not None


@pytest.mark.django_db(transaction=True)
def test_messages_sent_while_the_broker_is_down_answer_201_and_the_backlog_sweep_embeds_them(
    api, run, settings, hashing_embedder, dead_broker, caplog
):
    # given a write path that leaves every message to the task, and a broker that is down
    settings.EMBED_BUDGET_MS = 0
    api.raise_request_exception = False
    # when a run appends messages (the transaction commits, then the task's publish fails)
    started = time.monotonic()
    response = messages_post(api, run.headers, "conv-1", ("user", "hello"), ("tool", "{}"))
    elapsed = time.monotonic() - started
    # then the write answers as usual, soon, unembedded, with the failed publish logged
    assert response.status_code == 201, response.content
    assert elapsed < DEAD_BROKER_WITHIN_SECONDS
    assert [m["embedded"] for m in response.json()["messages"]] == [False, False]
    message = Message.objects.get(sequence=1)
    assert publish_warned(caplog, "recall.tasks.embed_messages", message.id)
    # and when beat runs the backlog sweep, it embeds the message (never the tool's)
    assert embed_backlog() == 1
    message.refresh_from_db()
    assert message.embedding_model == "kindmem-hashing-v1"
    assert Message.objects.get(sequence=2).embedding is None
    assert embed_backlog() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_gap_free_unique_sequences():
    # given a conversation, and several writers appending at once
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    factories.agent_create(tenant)
    app = factories.app_key_create(tenant, [project])
    minted = factories.run_create(app, project, participant_id="cust-1", thread_id="busy")
    writers, batches = 4, 5
    errors: list[object] = []
    barrier = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            client = APIClient()
            barrier.wait()
            for i in range(batches):
                response = messages_post(
                    client, minted.headers, "busy", ("user", f"w{n}-{i}a"), ("agent", f"w{n}-{i}b")
                )
                if response.status_code != 201:
                    errors.append(response.json())
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then every message landed, numbered 1..N without a gap, each batch contiguous
    assert errors == []
    rows = list(Message.objects.order_by("sequence").values_list("sequence", "text"))
    assert [s for s, _ in rows] == list(range(1, writers * batches * 2 + 1))
    for (s1, t1), (s2, t2) in zip(rows[::2], rows[1::2], strict=True):
        assert (s2, t2) == (s1 + 1, t1[:-1] + "b")
    assert Conversation.objects.get().last_sequence == writers * batches * 2


def test_a_run_of_another_project_may_not_write_to_a_conversation_with_its_thread_id(
    api, world, run
):
    # given conv-1 exists in the world's project
    messages_post(api, run.headers, "conv-1", ("user", "hello"))
    # when a run of another project names the same thread
    other_project = factories.project_create(world.tenant)
    other_app = factories.app_key_create(world.tenant, [other_project])
    # then no such run is minted (the thread is another project's) and nothing lands
    with pytest.raises(Forbidden):
        factories.run_create(other_app, other_project, participant_id="cust-1", thread_id="conv-1")
    assert Message.objects.count() == 1
