"""MCP tool-call latency next to the same operation over REST, on one live server.

    .venv/bin/python bench/mcp_latency.py [--facts 500] [--calls 100] [--rounds 3]

Starts kindmem's ASGI app (config/asgi.py) under uvicorn on a throwaway test database of the
embedded PostgreSQL (created and dropped by the script), and times, as one run token, each
operation through the MCP SDK's own client (streamable HTTP, one tool call per request) and
through plain HTTP to its REST route on the same server, alternating rounds so the machine's
noise falls on both alike. Prints p50/p95 per operation and the MCP overhead (the tool call
also carries JSON-RPC framing and the in-process dispatch to the route).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import httpx2  # noqa: E402
from asgiref.sync import async_to_sync  # noqa: E402
from django.db import connection  # noqa: E402
from mcp.client import Client as McpClient  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def seed(facts: int) -> tuple[str, str]:
    """A tenant with `facts` facts of one end user; a run token for that end user and one
    fact's id."""
    from facts.services import fact_create
    from tests import factories
    from tests.approvals.conftest import declare

    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    agent = declare(factories.agent_create(tenant))
    run = factories.run_create(app, project, agent=agent, participant_id="p-1")
    fact_id = ""
    for i in range(facts):
        written = fact_create(
            principal=app.principal,
            type="preference",
            content={"text": f"likes item {i} in colour {i % 7} with tea"},
            scope={"project_id": project.id, "participant_id": "p-1"},
        )
        fact_id = str(written.revision.fact_id)
    return run.token, fact_id


def operations(fact_id: str) -> list[tuple[str, str, str, dict[str, Any] | None, dict[str, Any]]]:
    """(name, REST method, REST path, REST body, MCP tool arguments) per operation."""
    return [
        ("list 20", "GET", "/v1/facts?limit=20", None, {"limit": 20}),
        ("get one", "GET", f"/v1/facts/{fact_id}", None, {"memory_id": fact_id}),
        (
            "keyword search",
            "POST",
            "/v1/facts/search",
            {"query": "tea colour", "mode": "keyword", "top_k": 10},
            {"query": "tea colour", "mode": "keyword", "top_k": 10},
        ),
    ]


TOOLS = {"list 20": "list_memories", "get one": "get_memory", "keyword search": "search_memories"}


@async_to_sync
async def measure(base: str, token: str, fact_id: str, calls: int, rounds: int) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    times: dict[tuple[str, str], list[float]] = {}
    async with (
        httpx2.AsyncClient(base_url=base, headers=headers, timeout=30) as http,
        httpx2.AsyncClient(headers=headers, timeout=30) as mcp_http,
        McpClient(streamable_http_client(f"{base}/mcp", http_client=mcp_http)) as mcp,
    ):
        for name, method, path, body, arguments in operations(fact_id):  # warm both paths
            (await http.request(method, path, json=body)).raise_for_status()
            assert not (await mcp.call_tool(TOOLS[name], arguments)).is_error
        for _ in range(rounds):
            for name, method, path, body, arguments in operations(fact_id):
                for via in ("rest", "mcp"):
                    bucket = times.setdefault((name, via), [])
                    for _ in range(calls):
                        start = time.perf_counter()
                        if via == "rest":
                            answer = await http.request(method, path, json=body)
                            assert answer.status_code == 200, answer.text
                        else:
                            result = await mcp.call_tool(TOOLS[name], arguments)
                            assert not result.is_error, result.content
                        bucket.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=500)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from tests.processes import asgi_server

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        token, fact_id = seed(args.facts)
        with asgi_server() as base:
            times = measure(base, token, fact_id, args.calls, args.rounds)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(f"{args.facts} facts of one end user, as its run; {args.calls * args.rounds} calls each")
    print("| operation | REST p50 / p95 ms | MCP tool p50 / p95 ms | MCP / REST (p50) |")
    print("|---|---|---|---|")
    for name in TOOLS:
        rest, mcp = times[(name, "rest")], times[(name, "mcp")]
        rest_ms = f"{percentile(rest, 0.5):.1f} / {percentile(rest, 0.95):.1f}"
        mcp_ms = f"{percentile(mcp, 0.5):.1f} / {percentile(mcp, 0.95):.1f}"
        ratio = statistics.median(mcp) / statistics.median(rest)
        print(f"| {name} (`{TOOLS[name]}`) | {rest_ms} | {mcp_ms} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
