"""The "Agents" examples (docs/agents.md, and README's MCP config) run as written against a live
kindmem: the MCP client config (its URL and headers, used by the MCP SDK's own client), the MCP
SDK 2.x client example, the LangGraph store and the OpenAI Agents SDK session (their Python
blocks, executed with what `make run` prints filled in). The Python client's example runs in
test_python_client.py, the TypeScript client's in test_typescript_client.py.

The Agents SDK example's `MODEL` is a scripted `agents.Model` standing in for the language
model (no LLM is called); everything else is the README's own code over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from agents import set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from kindmem_client import Client
from mcp.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from tests import factories
from tests.documentation import block
from tests.processes import asgi_server

pytestmark = pytest.mark.django_db(transaction=True)


def printed(code: str, names: dict[str, Any]) -> list[str]:
    """What the docs' `code` prints, run as a reader would, on a thread of its own (its
    asyncio.run needs a thread with no running loop)."""

    def execute() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, dict(names))  # noqa: S102 - the docs' own example
        return out.getvalue()

    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(execute).result().splitlines()


def test_the_docs_have_an_example_for_each_integration():
    assert block("MCP server", "json")
    assert "streamable_http_client(" in block("MCP server", "python")
    assert block("Python client", "python")
    assert "KindmemStore(" in block("LangGraph store", "python")
    assert "KindmemSession(" in block("OpenAI Agents SDK session", "python")


@pytest.mark.parametrize("heading", ["Connect an agent", "MCP server"])
def test_the_mcp_client_config_reaches_kindmems_tools(tenancy, heading):
    # given the config as README (and the Agents page) write it, with a run token and the
    # server's address
    config = json.loads(block(heading, "json"))["mcpServers"]["kindmem"]
    assert config["type"] == "http"
    token = factories.run_create(
        tenancy.app, tenancy.project, agent=tenancy.agent, participant_id="p-1"
    ).token
    with asgi_server() as base:
        url = config["url"].replace("http://127.0.0.1:8001", base)
        headers = {k: v.replace("kmr_...", token) for k, v in config["headers"].items()}

        async def session() -> tuple[set[str], Any, Any]:
            # when an MCP client connects with exactly that URL and those headers
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                McpClient(streamable_http_client(url, http_client=http)) as client,
            ):
                tools = {t.name for t in (await client.list_tools()).tools}
                remembered = await client.call_tool(
                    "remember",
                    {"type": "preference", "text": "Prefers email", "tool_call_id": "c-1"},
                )
                found = await client.call_tool(
                    "search_memories", {"query": "email", "mode": "keyword"}
                )
                return tools, remembered, found

        with ThreadPoolExecutor(max_workers=1) as thread:
            tools, remembered, found = thread.submit(asyncio.run, session()).result()

    # then it lists kindmem's tools, and remembers and finds as the run
    assert {"remember", "search_memories", "recall", "append_messages"} <= tools
    assert not remembered.is_error
    assert remembered.structured_content["outcome"] == "created"
    hits = found.structured_content["hits"]
    assert [h["fact"]["content"] for h in hits] == [{"text": "Prefers email"}]


def test_the_mcp_sdk_client_example_does_what_it_says(tenancy):
    # given a run's token and kindmem's MCP server, live under uvicorn
    token = factories.run_create(
        tenancy.app, tenancy.project, agent=tenancy.agent, participant_id="p-1"
    ).token
    code = block("MCP server", "python")
    assert 'MCP_URL = "http://127.0.0.1:8001/mcp"' in code
    with asgi_server() as base:
        # when the example runs as written, on the MCP SDK 2.x installed here, at that address
        lines = printed(
            code.replace("http://127.0.0.1:8001/mcp", f"{base}/mcp"), {"RUN_TOKEN": token}
        )
    # then it printed what its comments say: the tools listed, the memory created, then found
    assert lines == ["True", "created", "[{'text': 'Prefers SMS'}]"]


def test_the_langgraph_store_example_does_what_it_says(live_url, tenancy):
    lines = printed(
        block("LangGraph store", "python"),
        {"APP_KEY": tenancy.app.token, "URL": live_url, "PROJECT": str(tenancy.project.id)},
    )
    assert lines[0] == "{'content': 'Prefers green tea'}"
    assert re.fullmatch(r"created memory [0-9a-f-]{36}", lines[1])
    assert lines[2] == "Prefers green tea True"
    # and the memories are the end user's facts in kindmem
    with Client(tenancy.app.token, base_url=live_url) as app:
        facts = list(app.iter_facts(type="langgraph", participant_id="cust-42"))
    assert {f["content"]["content"] for f in facts} == {"Prefers green tea", "Lives in Lisbon"}


class BriefModel(Model):
    """Stands in for the language model: a brief answer naming how many questions it saw."""

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        asked = sum(1 for i in items if i.get("role") == "user")
        text = f"Noted ({asked} question(s) so far)."
        message = ResponseOutputMessage(
            id=f"msg_{asked}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the stand-in model does not stream")


def test_the_agents_sdk_session_example_does_what_it_says(live_url, tenancy):
    set_tracing_disabled(True)  # the SDK would send its traces to OpenAI
    lines = printed(
        block("OpenAI Agents SDK session", "python"),
        {
            "APP_KEY": tenancy.app.token,
            "URL": live_url,
            "PROJECT": str(tenancy.project.id),
            "MODEL": BriefModel(),
        },
    )
    assert lines == ["4", "['My parcel never arrived']"]
    # and the conversation is kindmem's, the second answer written having seen the first turn
    with Client(tenancy.app.token, base_url=live_url) as app:
        stored = app.list_messages("chat-7")["messages"]
    assert [(m["role"], m["text"]) for m in stored] == [
        ("user", "My parcel never arrived"),
        ("agent", "Noted (1 question(s) so far)."),
        ("user", "Can you refund it?"),
        ("agent", "Noted (2 question(s) so far)."),
    ]
