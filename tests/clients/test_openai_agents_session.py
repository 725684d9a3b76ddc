"""`KindmemSession` (kindmem_client.openai_agents) against a live kindmem: the OpenAI Agents
SDK's `Session` protocol, held against the SDK's own `SQLiteSession` as the reference, an SDK
`Runner` keeping a two-turn conversation with a tool call in it, and what kindmem adds (recall
of the history, the reader guard, erasure).

Everything goes over HTTP to a gunicorn on the test database (tests/clients/conftest.py).
No language model is called: the agent's model is a scripted `agents.Model` that answers from
the input the runner gives it, which is the history the session read back from kindmem.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.memory import Session, SessionSettings, SQLiteSession
from agents.models.interface import Model
from agents.usage import Usage
from kindmem_client import AsyncClient, Client, ErasureInProgress, Forbidden
from kindmem_client.openai_agents import KindmemSession
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

pytestmark = pytest.mark.django_db(transaction=True)


def run(coroutine: Awaitable[Any]) -> Any:
    """Run `coroutine` on a loop of its own thread (this thread's may be a browser's)."""

    async def main() -> Any:
        return await coroutine

    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, main()).result()


@pytest.fixture
def app(live_url, tenancy):
    with Client(tenancy.app.token, base_url=live_url) as client:
        yield client


def minted(app: Client, tenancy: Any, participant: str, thread: str) -> str:
    answer = app.mint_run(
        agent_id=tenancy.agent.agent_id,
        project_id=tenancy.project.id,
        participant_id=participant,
        thread_id=thread,
    )
    return answer["token"]


USER = {"role": "user", "content": "Where is my parcel?"}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "track",
    "arguments": '{"order": "A-7"}',
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "in Lyon"}
ANSWER = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "It is in Lyon.", "annotations": []}],
}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}
PARTS = {
    "role": "user",
    "content": [
        {"type": "input_text", "text": "And this photo?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
    ],
}
SYSTEM = {"role": "system", "content": "You are terse."}


# ---- the Session protocol, against the SDK's own SQLiteSession ----------------------------------


def test_the_session_is_an_agents_sdk_session():
    session = KindmemSession("conv-x", Client("kmk_x"))
    assert isinstance(session, Session)
    assert session.session_id == "conv-x"


def test_every_operation_answers_what_the_sdks_sqlite_session_answers(live_url, app, tenancy):
    token = minted(app, tenancy, "cust-1", "conv-1")

    async def script(session: Any) -> list[Any]:
        """A session's life: each step's answer, in order."""
        seen: list[Any] = [await session.get_items(), await session.pop_item()]
        await session.add_items([SYSTEM, USER, CALL, OUTPUT])
        await session.add_items([REASONING, ANSWER])
        await session.add_items([PARTS])
        seen += [
            await session.get_items(),
            await session.get_items(limit=2),
            await session.get_items(limit=100),
            await session.get_items(limit=0),
            await session.pop_item(),
            await session.get_items(),
            await session.pop_item(),
            await session.get_items(limit=3),
        ]
        await session.clear_session()
        seen += [await session.get_items(), await session.pop_item()]
        await session.add_items([USER])
        seen.append(await session.get_items())
        await session.clear_session()
        await session.clear_session()
        seen.append(await session.get_items())
        return seen

    async def both() -> tuple[list[Any], list[Any]]:
        reference = await script(SQLiteSession("conv-1"))
        async with AsyncClient(token, base_url=live_url) as client:
            return reference, await script(KindmemSession("conv-1", client))

    reference, kindmem = run(both())
    assert kindmem == reference
    # and the reference's answers are the ones the protocol documents
    assert reference[2] == [SYSTEM, USER, CALL, OUTPUT, REASONING, ANSWER, PARTS]
    assert reference[3] == [ANSWER, PARTS]
    assert reference[6] == PARTS


def test_a_sync_client_and_session_settings_work_too(live_url, app, tenancy):
    # given a session on a sync client, with a default limit of two items
    with Client(minted(app, tenancy, "cust-1", "conv-s"), base_url=live_url) as client:
        session = KindmemSession("conv-s", client, session_settings=SessionSettings(limit=2))

        async def life() -> tuple[Any, Any]:
            await session.add_items([USER, CALL, OUTPUT])
            return await session.get_items(), await session.get_items(limit=3)

        # then the default limit applies, and an explicit one overrides it
        assert run(life()) == ([CALL, OUTPUT], [USER, CALL, OUTPUT])


def test_a_long_history_reads_back_whole_across_pages_and_requests(live_url, app, tenancy):
    token = minted(app, tenancy, "cust-1", "conv-long")
    items = [{"role": "user", "content": f"message {i}"} for i in range(450)]
    big = {"type": "function_call_output", "call_id": "c", "output": "x" * 200_000}

    async def life() -> tuple[Any, Any, Any]:
        async with AsyncClient(token, base_url=live_url) as client:
            session = KindmemSession("conv-long", client)
            await session.add_items([*items, big, big, big, big, big])  # > 100, > 1 MiB
            everything = await session.get_items()
            return everything, await session.get_items(limit=201), await session.pop_item()

    everything, latest, popped = run(life())
    assert everything == [*items, *[big] * 5]
    assert latest == [*items[-196:], *[big] * 5]
    assert popped == big


# ---- an Agents SDK app, turn after turn ---------------------------------------------------------


class ScriptedModel(Model):
    """Stands in for the language model: asks for the `track` tool once per question, then
    answers with what the tool said and how many earlier user messages the input held."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append([dict(i) for i in items])
        turn = len(self.inputs)
        last = items[-1]
        if last.get("type") == "function_call_output":
            users = [i for i in items if i.get("role") == "user"]
            text = f"It is {last['output']}. (you asked {len(users)} times)"
            output: Any = ResponseOutputMessage(
                id=f"msg_{turn}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        else:
            output = ResponseFunctionToolCall(
                id=f"fc_{turn}",
                type="function_call",
                call_id=f"call_{turn}",
                name="track",
                arguments='{"order": "A-7"}',
                status="completed",
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


@function_tool
def track(order: str) -> str:
    """Where an order's parcel is."""
    return "in Lyon" if order == "A-7" else "unknown"


def conversation(
    model: ScriptedModel, session_for: Callable[[], Any], *questions: str
) -> list[str]:
    """Each question a turn of the SDK's runner with `session_for()`'s session."""

    async def turns() -> list[str]:
        agent = Agent(name="support", instructions="Help.", model=model, tools=[track])
        answers = []
        for question in questions:
            async with session_for() as session:
                result = await Runner.run(
                    agent, question, session=session, run_config=RunConfig(tracing_disabled=True)
                )
            answers.append(result.final_output)
        return answers

    return run(turns())


class OnRunToken:
    """A session on a run token's async client, opened and closed per turn (as a web app
    serving one request per turn would)."""

    def __init__(self, url: str, token: str, thread: str) -> None:
        self.url, self.token, self.thread = url, token, thread

    async def __aenter__(self) -> KindmemSession:
        self.client = AsyncClient(self.token, base_url=self.url)
        return KindmemSession(self.thread, self.client)

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.aclose()


def test_the_runner_keeps_the_history_in_kindmem_and_the_model_sees_it(live_url, app, tenancy):
    # given an agent with a tool, on a session of the run's conversation
    token = minted(app, tenancy, "cust-1", "conv-run")
    model = ScriptedModel()
    per_turn = lambda: OnRunToken(live_url, token, "conv-run")  # noqa: E731

    # when the end user asks twice, in two turns
    answers = conversation(model, per_turn, "Where is my parcel?", "Where is it now?")

    # then the second turn's model saw the first turn's items, read back from kindmem
    assert answers == ["It is in Lyon. (you asked 1 times)", "It is in Lyon. (you asked 2 times)"]
    second = model.inputs[2]
    assert [(i.get("type"), i.get("role")) for i in second] == [
        (None, "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        (None, "user"),
    ]
    assert second[1]["call_id"] == "call_1"
    assert second[3]["id"] == "msg_2"  # the assistant message with its own id, as the model gave it
    # and kindmem holds the conversation as messages: words as user and agent, tools as tool
    agent = app.with_token(token)
    stored = agent.list_messages("conv-run")["messages"]
    assert [(m["role"], m["text"]) for m in stored] == [
        ("user", "Where is my parcel?"),
        ("tool", "function_call track call_1"),
        ("tool", "function_call_output call_1"),
        ("agent", "It is in Lyon. (you asked 1 times)"),
        ("user", "Where is it now?"),
        ("tool", "function_call track call_3"),
        ("tool", "function_call_output call_3"),
        ("agent", "It is in Lyon. (you asked 2 times)"),
    ]
    # and recall finds the end user's words (never the tool traffic)
    hits = agent.recall(
        selections=[{"agent_id": tenancy.agent.agent_id}],
        mode="keyword",
        query="parcel Lyon track",
        roles=["user", "agent"],
    )["hits"]
    assert {h["message"]["text"] for h in hits} == {
        "Where is my parcel?",
        "It is in Lyon. (you asked 1 times)",
        "It is in Lyon. (you asked 2 times)",
    }


def test_an_app_keys_session_files_the_conversation_under_its_end_user(live_url, app, tenancy):
    # given an app's session for end user cust-5
    project = str(tenancy.project.id)

    async def life() -> list[Any]:
        async with AsyncClient(tenancy.app.token, base_url=live_url) as client:
            session = KindmemSession(
                "conv-app",
                client,
                agent_id=tenancy.agent.agent_id,
                project_id=project,
                participant_id="cust-5",
            )
            await session.add_items([USER, ANSWER])
            await session.add_items([USER])  # the conversation exists now: the same names agree
            return await session.get_items()

    assert run(life()) == [USER, ANSWER, USER]
    # then cust-5's own run reads the conversation and recalls from it; cust-6's does not
    mine = app.with_token(minted(app, tenancy, "cust-5", "conv-5"))
    theirs = app.with_token(minted(app, tenancy, "cust-6", "conv-6"))
    assert len(mine.list_messages("conv-app")["messages"]) == 3

    async def read_as(client: Client) -> list[Any]:
        return await KindmemSession("conv-app", client).get_items()

    assert run(read_as(mine)) == [USER, ANSWER, USER]
    assert run(read_as(theirs)) == []
    selections = [{"agent_id": tenancy.agent.agent_id}]
    assert mine.recall(selections=selections, mode="keyword", query="parcel")["hits"]
    assert theirs.recall(selections=selections, mode="keyword", query="parcel")["hits"] == []


def test_a_run_writes_only_its_own_conversation(live_url, app, tenancy):
    token = minted(app, tenancy, "cust-1", "conv-own")

    async def elsewhere() -> None:
        async with AsyncClient(token, base_url=live_url) as client:
            await KindmemSession("conv-not-mine", client).add_items([USER])

    with pytest.raises(Forbidden):
        run(elsewhere())


def test_once_an_erasure_of_the_person_starts_the_session_reads_as_nothing(live_url, app, tenancy):
    # given a session with history
    token = minted(app, tenancy, "cust-7", "conv-7")
    with Client(token, base_url=live_url) as client:
        session = KindmemSession("conv-7", client)
        run(session.add_items([USER, ANSWER]))
        assert run(session.get_items()) == [USER, ANSWER]

        # when a privacy officer's erasure of cust-7 starts (its worker has not run yet)
        with Client(tenancy.admin.token, base_url=live_url) as admin:
            admin.start_erasure(target_kind="participant", target_id="cust-7", reason="asked")

        # then the history reads as nothing, and nothing new lands
        assert run(session.get_items()) == []
        assert run(session.pop_item()) is None
        with pytest.raises(ErasureInProgress):
            run(session.add_items([USER]))
        with pytest.raises(ErasureInProgress):
            run(session.clear_session())
