"""kindmem behind PgBouncer in transaction pooling mode (KINDMEM_TRANSACTION_POOLING): nothing
lives in a server session, so two tenants' requests, interleaved over two server connections by
many clients at once, each see their own memories and nothing of the other's; writes, keyword and
semantic search, recall and the console all work through it."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests import factories
from tests.approvals.conftest import declare
from tests.processes import asgi_server, pgbouncer, web_server

pytestmark = [pytest.mark.slow, pytest.mark.topology]

WORDS = {"a": "zqalpha", "b": "zqbravo"}


def test_two_tenants_through_pgbouncer_each_see_only_their_own(transactional_db: None) -> None:
    # given: two tenants with an admin key, an app key and a run each, and the REST API (gunicorn)
    # and the MCP server (uvicorn, pooled) reaching the database only through PgBouncer's two
    # server connections
    worlds: dict[str, dict[str, Any]] = {}
    for name in WORDS:
        tenant = factories.tenant_create(name)
        project = factories.project_create(tenant)
        app = factories.app_key_create(tenant, [project])
        agent = declare(factories.agent_create(tenant))
        run = factories.run_create(app, project, agent=agent, participant_id=f"p-{name}")
        worlds[name] = {
            "admin": factories.admin_key_create(tenant).token,
            "run": run.token,
            "project": str(project.pk),
        }
    env = {"KINDMEM_EMBEDDER": "hashing", "KINDMEM_WRITE_RATE": "100000/min"}
    with pgbouncer(pool_size=2) as bouncer:
        env.update(bouncer.env)
        with web_server(env=env) as rest, asgi_server(env=env) as mcp:
            peaks: list[int] = []
            stop = threading.Event()

            def sample() -> None:
                from django.db import connections

                while not stop.is_set():
                    peaks.append(bouncer.server_connections())
                    stop.wait(0.05)
                connections.close_all()

            sampler = threading.Thread(target=sample)
            sampler.start()

            # when: 16 clients at once write, search (keyword and semantic), list and recall,
            # alternating tenants, through both surfaces
            def client(i: int) -> list[tuple[str, str, Any]]:
                name = "ab"[i % 2]
                world = worlds[name]
                seen: list[tuple[str, str, Any]] = []
                admin = {"Authorization": f"Bearer {world['admin']}"}
                with httpx.Client(timeout=60) as http:
                    for n in range(6):
                        wrote = http.post(
                            f"{rest}/v1/facts",
                            json={
                                "type": "note",
                                "content": f"{WORDS[name]} note {i}-{n}",
                                "scope": {"project_id": world["project"]},
                            },
                            headers=admin,
                        )
                        seen.append((name, "write", wrote.status_code))
                        for mode in ("keyword", "semantic"):
                            found = http.post(
                                f"{rest}/v1/facts/search",
                                json={"query": f"{WORDS[name]} note", "mode": mode, "top_k": 50},
                                headers=admin,
                            )
                            seen.append((name, mode, found.json()))
                        listed = http.post(
                            f"{mcp}/mcp",
                            json={
                                "jsonrpc": "2.0",
                                "id": n,
                                "method": "tools/call",
                                "params": {"name": "list_memories", "arguments": {"limit": 200}},
                            },
                            headers={**admin, "Accept": "application/json, text/event-stream"},
                        )
                        seen.append((name, "mcp", listed.json()))
                    remembered = http.post(
                        f"{rest}/v1/remember",
                        json={
                            "type": "preference",
                            "text": f"{WORDS[name]} likes tea {i}",
                            "tool_call_id": uuid.uuid4().hex,
                        },
                        headers={"Authorization": f"Bearer {world['run']}"},
                    )
                    seen.append((name, "remember", remembered.status_code))
                return seen

            with ThreadPoolExecutor(16) as pool:
                answers = [a for seen in pool.map(client, range(16)) for a in seen]
            stop.set()
            sampler.join(timeout=30)

    # then: every request succeeded, and every answer holds its own tenant's memories only
    texts: dict[str, set[str]] = {"a": set(), "b": set()}
    for name, what, answer in answers:
        other = WORDS["b" if name == "a" else "a"]
        if what in {"write", "remember"}:
            assert answer == 201, (name, what, answer)
            continue
        if what == "mcp":
            result = answer["result"]
            assert result["isError"] is False, result
            contents = [f["content"] for f in result["structuredContent"]["facts"]]
        else:
            assert "hits" in answer, (name, what, answer)
            contents = [h["fact"]["content"] for h in answer["hits"]]
        assert not [c for c in contents if other in str(c)], (name, what, contents)
        texts[name] |= {str(c) for c in contents}
    # and each tenant found its own writes (reads ran under its tenant, not an empty one)
    for name, word in WORDS.items():
        assert any(word in t for t in texts[name]), name
    # and PgBouncer never needed more than its two server connections
    assert peaks
    assert max(peaks) <= 2, peaks
