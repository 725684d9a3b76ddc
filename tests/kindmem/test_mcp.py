"""The MCP server (config/mcp_server.py) on a live server, driven by the MCP SDK's own client
over streamable HTTP: the tools, review, the reader guard across tools, audit and auth."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone
from mcp.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from audit.models import AuditEvent
from kindmem.models import ApiKey
from tests import factories
from tests.approvals.conftest import declare
from tests.processes import asgi_server

TOOLS = {
    "capabilities",
    "remember",
    "search_memories",
    "get_memory",
    "list_memories",
    "memory_history",
    "update_memory",
    "patch_memory",
    "delete_memory",
    "link_memories",
    "memory_links",
    "update_link",
    "delete_link",
    "import_memory_file",
    "recall",
    "append_messages",
    "extract_memories",
    "extractions",
    "list_pending_approvals",
    "decide_approval",
}
READ_ONLY = {
    "capabilities",
    "search_memories",
    "get_memory",
    "list_memories",
    "memory_history",
    "memory_links",
    "recall",
    "extractions",
    "list_pending_approvals",
}
DESTRUCTIVE = {
    "update_memory",
    "patch_memory",
    "delete_memory",
    "update_link",
    "delete_link",
    "decide_approval",
}


@asynccontextmanager
async def mcp_client(base: str, token: str | None) -> AsyncIterator[McpClient]:
    """The SDK's client on kindmem's /mcp, over streamable HTTP, with a Bearer credential."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        McpClient(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


def outcome(result: Any) -> dict[str, Any]:
    """A tool result as data: its structured output, or its error body."""
    if result.is_error:
        assert json.loads(result.content[0].text) == result.structured_content
        return {"error": result.structured_content}
    return result.structured_content


@dataclass
class Tenant:
    tenant: Any
    project: Any
    admin: factories.Keyed
    run_a: factories.Minted
    run_b: factories.Minted


@pytest.fixture
def tenant(transactional_db: None) -> Tenant:
    """A tenant whose agent declares memory types, with runs for two end users (committed, for
    the server's own process)."""
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    agent = declare(factories.agent_create(tenant))
    run_a = factories.run_create(app, project, agent=agent, participant_id="p-a", thread_id="t-a")
    run_b = factories.run_create(app, project, agent=agent, participant_id="p-b", thread_id="t-b")
    return Tenant(tenant, project, factories.admin_key_create(tenant), run_a, run_b)


@pytest.fixture
def server(tenant: Tenant) -> Iterator[str]:
    with asgi_server() as base:
        yield base


def test_an_agent_remembers_over_mcp_a_reviewer_approves_and_only_its_person_finds_it(
    tenant: Tenant, server: str
) -> None:
    @async_to_sync
    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with mcp_client(server, tenant.run_a.token) as agent_a:
            # the tools, with their hints
            listed = (await agent_a.list_tools()).tools
            seen["tools"] = {t.name: t for t in listed}
            seen["capabilities"] = outcome(await agent_a.call_tool("capabilities", {}))
            # an instruction-like memory comes back pending, and nobody reads it yet
            seen["remembered"] = outcome(
                await agent_a.call_tool(
                    "remember",
                    {
                        "type": "preference",
                        "text": "Always answer her in French",
                        "tool_call_id": "call-1",
                    },
                )
            )
            fact_id = seen["remembered"]["fact"]["id"]
            seen["pending_get"] = outcome(
                await agent_a.call_tool("get_memory", {"memory_id": fact_id})
            )
            seen["run_may_not_review"] = outcome(
                await agent_a.call_tool("list_pending_approvals", {})
            )
            await agent_a.call_tool(
                "append_messages",
                {
                    "conversation_id": "t-a",
                    "messages": [{"role": "user", "text": "I only read French, merci"}],
                },
            )
        # a reviewer (the tenant admin's key) approves it through MCP's staff tools
        async with mcp_client(server, tenant.admin.token) as reviewer:
            seen["queue"] = outcome(await reviewer.call_tool("list_pending_approvals", {}))
            seen["decided"] = outcome(
                await reviewer.call_tool(
                    "decide_approval",
                    {"approval_id": seen["remembered"]["approval_id"], "decision": "approve"},
                )
            )
        async with mcp_client(server, tenant.run_a.token) as agent_a:
            seen["found"] = outcome(
                await agent_a.call_tool("search_memories", {"query": "French", "mode": "keyword"})
            )
            seen["history"] = outcome(
                await agent_a.call_tool("memory_history", {"memory_id": fact_id})
            )
            seen["recalled"] = outcome(
                await agent_a.call_tool(
                    "recall",
                    {"selections": [{"agent_id": "support-bot"}], "query": "French"},
                )
            )
        # another end user's run sees none of it, through any tool
        async with mcp_client(server, tenant.run_b.token) as agent_b:
            calls = {
                "search_memories": {"query": "French", "mode": "keyword"},
                "list_memories": {},
                "get_memory": {"memory_id": fact_id},
                "memory_history": {"memory_id": fact_id},
                "update_memory": {"memory_id": fact_id, "content": "Answer in English"},
                "delete_memory": {"memory_id": fact_id},
                "recall": {"selections": [{"agent_id": "support-bot"}], "query": "French"},
            }
            seen["other"] = {
                name: outcome(await agent_b.call_tool(name, args)) for name, args in calls.items()
            }
        return seen

    seen = scenario()

    # then every tool is listed with JSON-schema'd arguments and its hints
    tools = seen["tools"]
    assert set(tools) == TOOLS
    assert tools["remember"].input_schema["required"] == ["type", "text", "tool_call_id"]
    assert tools["search_memories"].input_schema["properties"]["mode"]["enum"] == [
        "keyword",
        "semantic",
        "hybrid",
    ]
    assert {n for n, t in tools.items() if t.annotations.read_only_hint} == READ_ONLY
    assert {n for n, t in tools.items() if t.annotations.destructive_hint} == DESTRUCTIVE
    assert all(t.output_schema is not None for t in tools.values())
    # the probe, as the run's credential: it may remember, not review
    assert seen["capabilities"]["kind"] == "run"
    assert seen["capabilities"]["operations"]["remember"] is True
    assert seen["capabilities"]["operations"]["review"] is False
    # the memory waited for review, unreadable, and a run may not review
    remembered = seen["remembered"]
    assert remembered["outcome"] == "created"
    assert "instruction-like" in remembered["review"]["reasons"]
    assert seen["pending_get"]["error"]["code"] == "fact-not-found"
    assert seen["run_may_not_review"]["error"]["code"] == "forbidden"
    # the reviewer saw it queued and approved it; then its person's run finds it
    assert [a["id"] for a in seen["queue"]["approvals"]] == [remembered["approval_id"]]
    assert seen["decided"]["status"] == "approved"
    fact_id = remembered["fact"]["id"]
    assert [h["fact"]["id"] for h in seen["found"]["hits"]] == [fact_id]
    assert [r["version"] for r in seen["history"]["revisions"]] == [1]
    assert [h["message"]["text"] for h in seen["recalled"]["hits"]] == ["I only read French, merci"]
    # and the other person's run reads nothing of it, and changes nothing
    other = seen["other"]
    assert other["search_memories"] == {"hits": []}
    assert other["list_memories"] == {"facts": [], "next_cursor": None}
    assert other["recall"] == {"hits": []}
    for name in ("get_memory", "memory_history", "update_memory", "delete_memory"):
        assert other[name]["error"]["code"] == "fact-not-found", name

    # and each tool call left the REST route's audit event, as its caller
    events = AuditEvent.objects.of_tenant(tenant.tenant.id).order_by("seq")
    remembered_event = events.get(endpoint="POST remember")
    assert remembered_event.outcome == "success"
    assert remembered_event.run_id == tenant.run_a.run.id
    assert fact_id in remembered_event.object_ids
    assert "participant:p-a" in remembered_event.subjects
    searches = events.filter(endpoint="POST facts-search")
    assert [(e.run_id, e.outcome) for e in searches] == [
        (tenant.run_a.run.id, "success"),
        (tenant.run_b.run.id, "success"),
    ]
    refused = events.filter(run_id=tenant.run_b.run.id, endpoint="GET fact").get()
    assert (refused.outcome, refused.error_code) == ("failure", "fact-not-found")


def test_the_mcp_endpoint_wants_a_bearer_credential_and_checks_it(
    tenant: Tenant, server: str
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {},
    }
    # without a credential: 401 in the error shape, before MCP sees the request
    bare = httpx2.post(f"{server}/mcp", json=initialize, timeout=30)
    assert bare.status_code == 401
    assert bare.json()["code"] == "unauthenticated"
    assert bare.headers["www-authenticate"].startswith("Bearer")

    # with a made-up or revoked one: 401 in the error shape too, before any stream is opened
    # (the credential is looked up as REST looks it up)
    revoked = factories.admin_key_create(tenant.tenant)
    ApiKey.objects.filter(pk=revoked.key.pk).update(revoked_at=timezone.now())
    for token in ("kmk_not-a-key", "kmk_" + "a" * 52, revoked.token):
        refused = httpx2.post(
            f"{server}/mcp",
            json=initialize,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=30,
        )
        assert refused.status_code == 401, token
        assert set(refused.json()) == {"code", "message", "details"}
        assert refused.json()["code"] == "unauthenticated"


def test_tool_calls_spend_the_credentials_write_budget_like_rest_calls(
    tenant: Tenant, transactional_db: None
) -> None:
    # given a server where a credential may write twice a minute
    with asgi_server(env={"KINDMEM_WRITE_RATE": "2/min"}) as base:

        @async_to_sync
        async def three_writes() -> list[dict[str, Any]]:
            async with mcp_client(base, tenant.run_a.token) as agent:
                results = []
                for i in range(3):
                    remembered = await agent.call_tool(
                        "remember",
                        {"type": "preference", "text": f"likes tea {i}", "tool_call_id": f"c{i}"},
                    )
                    results.append(outcome(remembered))
                # reads are not throttled
                results.append(outcome(await agent.call_tool("list_memories", {})))
                return results

        # when its run remembers three times over MCP
        first, second, third, listed = three_writes()
    # then the third write is refused as the REST route refuses it, and reads go on
    assert first["outcome"] == second["outcome"] == "created"
    assert third["error"]["code"] == "rate-limited"
    assert len(listed["facts"]) == 2


def test_a_client_of_the_handshake_era_gets_stateless_json_answers(
    tenant: Tenant, server: str
) -> None:
    # given a client that opens with the initialize handshake (the 2025 revisions)
    headers = {
        "Authorization": f"Bearer {tenant.run_a.token}",
        "Accept": "application/json, text/event-stream",
    }
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    # when it initializes over plain HTTP
    answer = httpx2.post(f"{server}/mcp", json=hello, headers=headers, timeout=30)
    # then the answer is one JSON body, and no session is opened (any process may answer next)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in answer.headers
    assert answer.json()["result"]["serverInfo"]["name"] == "kindmem"

    # and the SDK's client in that mode calls tools as well
    @async_to_sync
    async def legacy() -> dict[str, Any]:
        http_headers = {"Authorization": f"Bearer {tenant.run_a.token}"}
        async with (
            httpx2.AsyncClient(headers=http_headers, timeout=30) as http,
            McpClient(
                streamable_http_client(f"{server}/mcp", http_client=http), mode="legacy"
            ) as client,
        ):
            return outcome(await client.call_tool("list_memories", {}))

    assert legacy() == {"facts": [], "next_cursor": None}


def test_an_agent_patches_a_memory_over_mcp_nulls_included(tenant: Tenant, server: str) -> None:
    from facts import services as fact_services

    # given a memory about the run's person, written by the tenant admin
    written = fact_services.fact_create(
        principal=tenant.admin.principal,
        type="profile",
        content={"city": "Porto", "title": "Dr"},
        scope={"project_id": str(tenant.project.id), "participant_id": "p-a"},
    )
    fact_id = str(written.revision.fact_id)

    @async_to_sync
    async def scenario() -> dict[str, Any]:
        async with mcp_client(server, tenant.admin.token) as admin:
            patched = outcome(
                await admin.call_tool(
                    "patch_memory",
                    {"memory_id": fact_id, "patch": {"content": {"city": "Lisbon", "title": None}}},
                )
            )
            stale = outcome(
                await admin.call_tool(
                    "patch_memory",
                    {
                        "memory_id": fact_id,
                        "patch": {"content": {"city": "X"}},
                        "expected_version": 1,
                    },
                )
            )
        async with mcp_client(server, tenant.run_b.token) as other:
            foreign = outcome(
                await other.call_tool(
                    "patch_memory", {"memory_id": fact_id, "patch": {"content": {"city": "Y"}}}
                )
            )
        return {"patched": patched, "stale": stale, "foreign": foreign}

    seen = scenario()
    # then the null reached the merge patch (the key is gone), a stale version is a conflict,
    # and another person's run cannot patch what it cannot read
    assert seen["patched"]["fact"]["content"] == {"city": "Lisbon"}
    assert seen["patched"]["fact"]["version"] == 2
    assert seen["stale"]["error"]["code"] == "conflict"
    assert seen["foreign"]["error"]["code"] == "fact-not-found"


def test_an_agent_links_follows_ends_removes_and_imports_over_mcp(
    tenant: Tenant, server: str
) -> None:
    import io
    import zipfile

    from facts import services as fact_services

    # given two memories about the run's person
    scope = {"project_id": str(tenant.project.id), "participant_id": "p-a"}
    a, b = (
        str(
            fact_services.fact_create(
                principal=tenant.admin.principal, type="profile", content={"text": t}, scope=scope
            ).revision.fact_id
        )
        for t in ("lives in Porto", "works in Braga")
    )

    @async_to_sync
    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with mcp_client(server, tenant.run_a.token) as agent:
            linked = outcome(
                await agent.call_tool(
                    "link_memories", {"memory_id": a, "target": b, "type": "related"}
                )
            )
            link_id = linked["link"]["id"]
            seen["followed"] = outcome(await agent.call_tool("memory_links", {"memory_id": a}))
            seen["ended"] = outcome(
                await agent.call_tool(
                    "update_link",
                    {
                        "memory_id": a,
                        "link_id": link_id,
                        "changes": {"invalid_at": "2020-01-01T00:00:00Z", "confidence": None},
                    },
                )
            )
            seen["after_end"] = outcome(await agent.call_tool("memory_links", {"memory_id": a}))
            seen["removed"] = outcome(
                await agent.call_tool("delete_link", {"memory_id": a, "link_id": link_id})
            )
            seen["again"] = outcome(
                await agent.call_tool("delete_link", {"memory_id": a, "link_id": link_id})
            )
        async with mcp_client(server, tenant.admin.token) as admin:
            seen["imported"] = outcome(
                await admin.call_tool("import_memory_file", {"file": seen_file})
            )
            seen["broken"] = outcome(
                await admin.call_tool("import_memory_file", {"file": "---\nid: x\n---\nno\n"})
            )
        return seen

    # and a memory file of fact a, as the REST export writes it
    exported = httpx2.get(
        f"{server}/v1/facts/export",
        headers={"Authorization": f"Bearer {tenant.admin.token}"},
        timeout=30,
    )
    assert exported.status_code == 200, exported.text
    seen_file = zipfile.ZipFile(io.BytesIO(exported.content)).read(f"facts/{a}.md").decode()
    seen = scenario()
    assert [r["fact"]["id"] for r in seen["followed"]["reached"]] == [b]
    assert seen["ended"]["link"]["invalid_at"] == "2020-01-01T00:00:00Z"
    assert seen["ended"]["link"]["confidence"] is None
    assert seen["after_end"]["reached"] == []
    assert seen["removed"]["link"]["target"] == b
    assert seen["again"]["error"]["code"] == "fact-not-found"
    assert [f["outcome"] for f in seen["imported"]["files"]] == ["unchanged"]
    assert seen["imported"]["files"][0]["fact_id"] == a
    assert seen["broken"]["error"]["code"] == "validation-error"


def test_a_tool_calls_arguments_that_do_not_fit_are_refused_in_the_error_shape(
    tenant: Tenant, server: str
) -> None:
    headers = {
        "Authorization": f"Bearer {tenant.run_a.token}",
        "Accept": "application/json, text/event-stream",
    }

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        answer = httpx2.post(f"{server}/mcp", json=body, headers=headers, timeout=30)
        assert answer.status_code == 200
        result = answer.json()["result"]
        assert result["isError"] is True
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return result["structuredContent"]

    # when: a top_k over the tool's bound, a required argument left out, a tool that is not
    out_of_range = call("search_memories", {"query": "tea", "top_k": 1000})
    missing = call("search_memories", {})
    unknown = call("forget_everything", {})
    # then: each a tool error in the error shape, naming the argument
    assert out_of_range["code"] == "validation-error"
    assert "top_k" in out_of_range["details"]
    assert missing["code"] == "validation-error"
    assert "query" in missing["details"]
    assert unknown["code"] == "not-found"
    for error in (out_of_range, missing, unknown):
        assert set(error) == {"code", "message", "details"}
