"""An app's key acts for its projects' end users and never opens a Kindgi user's own
conversation or run (a user and no participant: DESIGN rule 1), through every door: reading,
appending, clearing and deleting messages, recall, extraction, the run log read and appended.
Each answers exactly as for an id that does not exist (the red team's finding 5)."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from recall.models import Message
from runlog.models import LogEntry
from tests import factories
from tests.recall.conftest import messages_post, messages_url, recall


def message_url(conversation_id: str, sequence: int) -> str:
    return reverse(
        "conversation-message", kwargs={"conversation_id": conversation_id, "sequence": sequence}
    )


def extract_url(conversation_id: str) -> str:
    return reverse("conversation-extract", kwargs={"conversation_id": conversation_id})


def log_url(run_id: object) -> str:
    return f"/v1/runs/{run_id}/log"


@pytest.fixture
def alices(api, world):
    """The world's member user's own run in the app's project, with a conversation and a log
    entry, written with the run token her own key minted."""
    minted = factories.run_create(world.user_key, world.project, user=world.user, thread_id="own")
    response = messages_post(api, minted.headers, "own", ("user", "my secret pineapple"))
    assert response.status_code == 201
    response = api.post(
        log_url(minted.run.id),
        {"kind": "turn", "payload": {"x": "secret"}},
        format="json",
        **minted.headers,
    )
    assert response.status_code == 201
    return minted


def same(first, second) -> None:
    """Two answers alike: status and the whole body."""
    assert (first.status_code, first.json()) == (second.status_code, second.json())


def test_an_app_reads_writes_and_clears_none_of_a_kindgi_users_conversation(api, world, alices):
    app, missing = world.app.headers, f"nope-{uuid.uuid4()}"
    # when the app reads, appends to, clears, deletes a message of and extracts from it
    # then each answer is the one for a conversation that does not exist
    for method, url in [
        ("get", messages_url),
        ("delete", messages_url),
        ("delete", lambda c: message_url(c, 1)),
        ("post", extract_url),
        ("get", extract_url),
    ]:
        theirs = getattr(api, method)(url("own"), **app)
        assert theirs.status_code == 404
        assert theirs.json()["code"] == "not-found"
        same(theirs, getattr(api, method)(url(missing), **app))
    appended = messages_post(api, app, "own", ("user", "forged"))
    assert appended.status_code == 404
    same(appended, messages_post(api, app, missing, ("user", "forged")))
    # and nothing was written or deleted
    assert list(Message.objects.values_list("text", flat=True)) == ["my secret pineapple"]
    # while her own run still reads it
    assert api.get(messages_url("own"), **alices.headers).status_code == 200


def test_an_app_recalls_nothing_of_a_kindgi_users_conversations(api, world, alices):
    # when the app recalls by her, by the conversation, and everything of its agent
    selections = [
        {"agent_id": world.agent.agent_id, "user_id": str(world.user.id)},
        {"agent_id": world.agent.agent_id, "conversation_id": "own"},
        {"agent_id": world.agent.agent_id},
    ]
    for selection in selections:
        for body in [{"mode": "list"}, {"mode": "keyword", "query": "pineapple"}]:
            response = recall(api, world.app.headers, selections=[selection], **body)
            # then it finds nothing of hers
            assert response.status_code == 200, response.json()
            assert response.json()["hits"] == []
    # while her own key recalls it
    mine = recall(api, world.user_key.headers, selections=[selections[0]], mode="list")
    assert [h["message"]["text"] for h in mine.json()["hits"]] == ["my secret pineapple"]


def test_an_app_reads_and_appends_to_no_kindgi_users_run_log(api, world, alices):
    app, missing = world.app.headers, uuid.uuid4()
    entry = {"kind": "note", "payload": {"forged": True}}
    # when the app reads her run's log and appends to it
    read = api.get(log_url(alices.run.id), **app)
    appended = api.post(log_url(alices.run.id), entry, format="json", **app)
    verified = api.get(f"{log_url(alices.run.id)}/verify", **app)
    # then each answer is the one for a run that does not exist, and nothing is written
    assert read.status_code == 404
    assert read.json()["code"] == "not-found"
    same(read, api.get(log_url(missing), **app))
    same(appended, api.post(log_url(missing), entry, format="json", **app))
    same(verified, api.get(f"{log_url(missing)}/verify", **app))
    assert LogEntry.objects.filter(run=alices.run).count() == 1
    # while the app still reads its end users' runs in the same project
    theirs = factories.run_create(world.app, world.project, participant_id="cust-1")
    assert api.get(log_url(theirs.run.id), **app).status_code == 200
