"""A conversation's messages read back and deleted: GET and DELETE
/v1/conversations/{id}/messages, DELETE /v1/conversations/{id}/messages/{sequence}.

What an agent framework's session needs of kindmem (kindmem_client.agents): the history in
order with each message's `data` as written, the last item taken back, the history cleared.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from recall.models import Conversation, Message
from tests import factories
from tests.conftest import AUDIT_QUERIES, TENANT_QUERIES
from tests.recall.conftest import messages_post, messages_url, recall

pytestmark = pytest.mark.django_db

ITEM = {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text"}]}


def message_url(conversation_id: str, sequence: int) -> str:
    return reverse(
        "conversation-message", kwargs={"conversation_id": conversation_id, "sequence": sequence}
    )


def listed(api, headers, conversation_id: str = "conv-1", **params) -> dict:
    response = api.get(messages_url(conversation_id), params, **headers)
    assert response.status_code == 200, response.json()
    return response.json()


def test_messages_come_back_in_order_with_their_data_tool_messages_included(
    api, run, django_assert_num_queries
):
    # given messages, one tool message and one carrying data
    written = api.post(
        messages_url("conv-1"),
        {
            "messages": [
                {"role": "user", "text": "Where is my parcel?"},
                {"role": "tool", "text": "function_call track", "data": {"call_id": "c1"}},
                {"role": "agent", "text": "On its way", "data": ITEM},
            ]
        },
        format="json",
        **run.headers,
    )
    assert written.status_code == 201, written.json()

    # when the run reads its conversation (auth, conversation, messages, the audit event)
    with django_assert_num_queries(3 + TENANT_QUERIES + AUDIT_QUERIES):
        body = listed(api, run.headers)

    # then every message, oldest first, each with the data it was written with
    assert body["conversation_id"] == "conv-1"
    assert [(m["sequence"], m["role"], m["text"], m["data"]) for m in body["messages"]] == [
        (1, "user", "Where is my parcel?", None),
        (2, "tool", "function_call track", {"call_id": "c1"}),
        (3, "agent", "On its way", ITEM),
    ]
    assert body["next_before_sequence"] is None
    # and data is never searched: recall finds the text, not what data holds
    assert (
        recall(
            api,
            run.headers,
            selections=[{"agent_id": "support-bot"}],
            mode="keyword",
            query="output_text msg_1",
            roles=["user", "agent"],
        ).json()["hits"]
        == []
    )


def test_pages_go_from_the_newest_back(api, run):
    # given seven messages
    messages_post(api, run.headers, "conv-1", *[("user", f"m{i}") for i in range(1, 8)])

    # when read three at a time, from the newest back
    first = listed(api, run.headers, limit=3)
    second = listed(api, run.headers, limit=3, before_sequence=first["next_before_sequence"])
    third = listed(api, run.headers, limit=3, before_sequence=second["next_before_sequence"])

    # then each page is in order, the pages do not overlap, and the last says so
    assert [[m["text"] for m in p["messages"]] for p in (first, second, third)] == [
        ["m5", "m6", "m7"],
        ["m2", "m3", "m4"],
        ["m1"],
    ]
    assert [p["next_before_sequence"] for p in (first, second, third)] == [5, 2, None]


def test_a_conversation_one_may_not_recall_is_not_found(api, world, run):
    # given cust-1's conversation, and a run of another end user
    messages_post(api, run.headers, "conv-1", ("user", "secret"))
    other = factories.run_create(world.app, world.project, participant_id="cust-2")

    # then to it, to a Kindgi user's key and for a conversation that does not exist: 404
    for headers, conversation in [
        (other.headers, "conv-1"),
        (world.user_key.headers, "conv-1"),
        (run.headers, "conv-nope"),
    ]:
        response = api.get(messages_url(conversation), **headers)
        assert response.status_code == 404
        assert response.json()["code"] == "not-found"
        assert api.delete(messages_url(conversation), **headers).status_code == 404
        assert api.delete(message_url(conversation, 1), **headers).status_code == 404
    # and nothing was deleted
    assert Message.objects.count() == 1


def test_a_run_deletes_its_last_message_and_sequences_are_not_reused(api, run):
    # given three messages
    messages_post(api, run.headers, "conv-1", ("user", "a"), ("agent", "b"), ("user", "c"))

    # when the last is deleted
    response = api.delete(message_url("conv-1", 3), **run.headers)

    # then the answer carries it, and it is gone from reads and from recall
    assert response.status_code == 200, response.json()
    assert response.json()["message"]["text"] == "c"
    assert [m["text"] for m in listed(api, run.headers)["messages"]] == ["a", "b"]
    hits = recall(api, run.headers, selections=[{"agent_id": "support-bot"}], mode="list")
    assert [h["message"]["text"] for h in hits.json()["hits"]] == ["a"]
    # and the next message gets a new sequence, never the deleted one's
    again = messages_post(api, run.headers, "conv-1", ("user", "d"))
    assert [m["sequence"] for m in again.json()["messages"]] == [4]
    # and deleting it again is a 404
    gone = api.delete(message_url("conv-1", 3), **run.headers)
    assert (gone.status_code, gone.json()["code"]) == (404, "not-found")


def test_clearing_deletes_every_message_and_the_conversation_goes_on(api, world, run):
    # given a conversation of four messages, and another conversation of the same person
    messages_post(api, run.headers, "conv-1", *[("user", f"m{i}") for i in range(4)])
    elsewhere = factories.run_create(
        world.app, world.project, participant_id="cust-1", thread_id="conv-2"
    )
    messages_post(api, elsewhere.headers, "conv-2", ("user", "kept"))

    # when the app clears conv-1
    response = api.delete(messages_url("conv-1"), **world.app.headers)

    # then it is empty, the other conversation untouched, and appending goes on after it
    assert response.status_code == 200, response.json()
    assert response.json() == {"conversation_id": "conv-1", "deleted": 4}
    assert listed(api, run.headers)["messages"] == []
    assert Conversation.objects.filter(thread_id="conv-1").exists()
    assert list(Message.objects.values_list("text", flat=True)) == ["kept"]
    assert [
        m["sequence"]
        for m in messages_post(api, run.headers, "conv-1", ("user", "x")).json()["messages"]
    ] == [5]


def test_deletes_are_audited_naming_the_messages_and_the_person(api, run):
    messages_post(api, run.headers, "conv-1", ("user", "a"), ("user", "b"), ("user", "c"))

    api.delete(message_url("conv-1", 3), **run.headers)
    api.delete(messages_url("conv-1"), **run.headers)

    events = list(AuditEvent.objects.filter(phase="delete").order_by("seq"))
    assert [(e.endpoint, e.kind, e.outcome, e.object_ids) for e in events] == [
        ("DELETE conversation-message", "message", "success", ["conv-1#3"]),
        ("DELETE conversation-messages", "message", "success", ["conv-1#1", "conv-1#2"]),
    ]
    assert all(e.subjects == ["participant:cust-1"] for e in events)


@pytest.mark.parametrize("key", ["admin", "user_key"])
def test_only_runs_and_apps_delete_messages(api, world, run, key):
    # given a conversation; an admin may read it, and neither admin nor a user key may delete
    messages_post(api, run.headers, "conv-1", ("user", "a"))
    headers = getattr(world, key).headers
    for response in (
        api.delete(messages_url("conv-1"), **headers),
        api.delete(message_url("conv-1", 1), **headers),
    ):
        assert response.status_code in (403, 404)
    assert Message.objects.count() == 1


def test_a_run_deletes_only_in_its_own_conversation(api, world, run):
    # given a second conversation of the same end user, which the run may recall
    messages_post(api, run.headers, "conv-1", ("user", "mine"))
    other = factories.run_create(
        world.app, world.project, participant_id="cust-1", thread_id="conv-2"
    )
    messages_post(api, other.headers, "conv-2", ("user", "theirs"))
    assert listed(api, run.headers, "conv-2")["messages"][0]["text"] == "theirs"

    # when the run deletes there: forbidden, as appending there is
    response = api.delete(messages_url("conv-2"), **run.headers)
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    assert Message.objects.count() == 2


def test_while_an_erasure_holds_the_person_reads_find_nothing_and_deletes_are_refused(
    api, world, run
):
    messages_post(api, run.headers, "conv-1", ("user", "a"))
    factories.hold_create(world.tenant, "participant", "cust-1")
    assert api.get(messages_url("conv-1"), **world.app.headers).status_code == 404
    for response in (
        api.delete(messages_url("conv-1"), **world.app.headers),
        api.delete(message_url("conv-1", 1), **world.app.headers),
    ):
        assert (response.status_code, response.json()["code"]) == (409, "erasure-in-progress")
    assert Message.objects.count() == 1


def test_bad_parameters_and_data_are_a_400(api, run):
    messages_post(api, run.headers, "conv-1", ("user", "a"))
    for params in ({"limit": 0}, {"limit": 201}, {"before_sequence": 0}, {"limit": "x"}):
        response = api.get(messages_url("conv-1"), params, **run.headers)
        assert (response.status_code, response.json()["code"]) == (400, "validation-error")
    too_big = {"messages": [{"role": "user", "text": "a", "data": {"x": "y" * 300_000}}]}
    response = api.post(messages_url("conv-1"), too_big, format="json", **run.headers)
    assert (response.status_code, response.json()["code"]) == (400, "validation-error")
    assert Message.objects.count() == 1
