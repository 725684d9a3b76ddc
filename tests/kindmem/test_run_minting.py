"""Who may claim whom: a run names only the people and threads its minter stands for (issue 13,
holes 1-3 and 13), tried through the real API as a hostile caller would."""

from __future__ import annotations

import pytest

from kindmem.models import Run
from tests import factories

pytestmark = pytest.mark.django_db


def _mint(api, keyed, world, **body):
    return api.post(
        "/v1/runs",
        {"agent_id": world.agent.agent_id, "project_id": str(world.project.id), **body},
        format="json",
        **keyed.headers,
    )


def _fact(api, keyed, scope, text="private note", **extra):
    return api.post(
        "/v1/facts",
        {"type": "note", "content": {"text": text}, "scope": scope, **extra},
        format="json",
        **keyed.headers,
    )


def _auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_hole_1_a_user_key_cannot_mint_a_run_for_an_end_user(api, world):
    # when a Kindgi user's key names an app's end user
    response = _mint(api, world.user_key, world, participant_id="cust-42")
    # then it is refused and no run exists
    assert response.status_code == 403, response.json()
    assert response.json()["code"] == "forbidden"
    assert not Run.objects.filter(participant_id="cust-42").exists()


def test_hole_1_a_user_key_cannot_claim_an_end_users_conversation(api, world):
    # given an end user's conversation, with a card number in it, and a thread fact
    customer = factories.run_create(world.app, world.project, participant_id="cust-42")
    api.post(
        "/v1/conversations/thread-1/messages",
        {"role": "user", "text": "my card is 4111 1111 1111 1111"},
        format="json",
        **customer.headers,
    )
    scope = {"project_id": str(world.project.id), "thread_id": "thread-1"}
    assert _fact(api, world.app, scope).status_code == 201
    # when a Kindgi user's key mints a run naming that thread
    response = _mint(api, world.user_key, world, thread_id="thread-1")
    # then it is refused: the thread is the end user's
    assert response.status_code == 403, response.json()
    assert not Run.objects.filter(thread_id="thread-1", user=world.user).exists()


def test_hole_1_a_user_key_mints_runs_for_itself_and_its_own_threads(api, world):
    # when a Kindgi user mints a run for a thread of its own, twice
    first = _mint(api, world.user_key, world, thread_id="my-notes")
    again = _mint(api, world.user_key, world, thread_id="my-notes")
    # then both are minted, for that user
    assert first.status_code == 201, first.json()
    assert again.status_code == 201, again.json()
    assert first.json()["run"]["user_id"] == str(world.user.id)


def test_hole_2_an_app_key_cannot_mint_a_run_for_a_kindgi_user(api, world):
    # given a project member's personal fact
    assert _fact(api, world.user_key, {"user_id": str(world.user.id)}).status_code == 201
    # when an app key mints a run naming that member
    response = _mint(api, world.app, world, user_id=str(world.user.id), participant_id="cust-1")
    # then it is refused: an app reads no Kindgi user's personal facts
    assert response.status_code == 403, response.json()
    assert not Run.objects.filter(user=world.user).exists()


def test_hole_3_a_run_cannot_name_another_persons_thread(api, world):
    # given alice's conversation and a fact in her thread
    alice = _mint(api, world.app, world, participant_id="alice", thread_id="conv-a")
    assert alice.status_code == 201
    scope = {"project_id": str(world.project.id), "thread_id": "conv-a"}
    assert _fact(api, world.app, scope, text="alice's thread note").status_code == 201
    # when a run for bob names alice's thread
    response = _mint(api, world.app, world, participant_id="bob", thread_id="conv-a")
    # then it is refused; a run for alice on her thread is still fine
    assert response.status_code == 403, response.json()
    again = _mint(api, world.app, world, participant_id="alice", thread_id="conv-a")
    assert again.status_code == 201, again.json()
    facts = api.get("/v1/facts", **_auth(again.json()["token"])).json()["facts"]
    assert [f["content"]["text"] for f in facts] == ["alice's thread note"]


def test_hole_3_a_thread_in_another_project_cannot_be_claimed(api, world):
    # given a thread in the world's project, and an app that also acts in a second project
    other = factories.project_create(world.tenant, world.org)
    app = factories.app_key_create(world.tenant, [world.project, other])
    assert _mint(api, app, world, participant_id="alice", thread_id="conv-a").status_code == 201
    # when a run in the other project names it
    response = api.post(
        "/v1/runs",
        {
            "agent_id": world.agent.agent_id,
            "project_id": str(other.id),
            "participant_id": "alice",
            "thread_id": "conv-a",
        },
        format="json",
        **app.headers,
    )
    # then it is refused
    assert response.status_code == 403, response.json()


def test_hole_3_no_fact_or_conversation_lands_in_another_persons_thread(api, world):
    # given alice's thread
    assert _mint(api, world.app, world, participant_id="alice", thread_id="conv-a").status_code
    # when the app writes a fact for bob in it, or opens bob's conversation on it
    project = str(world.project.id)
    fact = _fact(
        api, world.app, {"project_id": project, "participant_id": "bob", "thread_id": "conv-a"}
    )
    message = api.post(
        "/v1/conversations/conv-a/messages",
        {
            "role": "user",
            "text": "hello",
            "agent_id": world.agent.agent_id,
            "project_id": project,
            "participant_id": "bob",
        },
        format="json",
        **world.app.headers,
    )
    # then both are refused
    assert fact.status_code == 403, fact.json()
    assert message.status_code == 403, message.json()


def test_hole_3_a_thread_fact_names_its_project(api, world):
    # when a fact names a thread but no project
    response = _fact(api, world.admin, {"thread_id": "conv-z"})
    # then it is refused, as a participant's fact without a project is
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid-fact"


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("participant", {"participant_id": "held-p"}),
        ("conversation", {"participant_id": "p-free", "thread_id": "held-t"}),
    ],
)
def test_hole_13_no_run_is_minted_for_a_person_under_erasure(api, world, kind, body):
    # given an erasure in progress for the person (or the conversation)
    held_id = body.get("thread_id") or body["participant_id"]
    factories.hold_create(world.tenant, kind, held_id)
    # when a run is minted for them
    response = _mint(api, world.app, world, **body)
    # then it is refused and nothing is minted
    assert response.status_code == 409, response.json()
    assert response.json()["code"] == "erasure-in-progress"
    assert not Run.objects.filter(participant_id=body["participant_id"]).exists()


def test_hole_13_no_run_is_minted_for_a_kindgi_user_under_erasure(api, world):
    factories.hold_create(world.tenant, "user", str(world.user.id))
    response = _mint(api, world.user_key, world)
    assert response.status_code == 409, response.json()


def test_hole_13_a_held_persons_run_log_reads_as_nothing(api, world):
    # given a run with a logged payload
    minted = factories.run_create(world.app, world.project, participant_id="held-p")
    logged = api.post(
        f"/v1/runs/{minted.run.id}/log",
        {"kind": "turn", "payload": {"text": "my address is 1 Main St"}},
        format="json",
        **minted.headers,
    )
    assert logged.status_code == 201
    # when the person's erasure is accepted
    factories.hold_create(world.tenant, "participant", "held-p")
    # then no credential reads the log, and nothing more is appended
    for headers in (world.app.headers, world.admin.headers, minted.headers):
        response = api.get(f"/v1/runs/{minted.run.id}/log", **headers)
        assert response.status_code in (404, 409), response.json()
        assert "Main St" not in response.content.decode()
    appended = api.post(
        f"/v1/runs/{minted.run.id}/log",
        {"kind": "turn", "payload": {"text": "more"}},
        format="json",
        **minted.headers,
    )
    assert appended.status_code == 409
