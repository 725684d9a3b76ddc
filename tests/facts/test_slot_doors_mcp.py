"""MCP's doors into a held slot, through a real server: a run's `import_memory_file` and
`remember` of an app's keyed fact are its next values, waiting for review, and its
`delete_memory` of it is refused; the person's other run reads the app's value alone (the
matrix over every credential and door is test_slot_doors.py)."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync

from facts import services
from tests import factories
from tests.approvals.conftest import declare
from tests.facts.memory_file_requests import memory
from tests.facts.test_slot_doors import KEY, NEW, OLD, _reasons
from tests.kindmem.test_mcp import mcp_client, outcome
from tests.processes import asgi_server


def test_over_mcp_a_run_neither_shadows_nor_deletes_an_apps_slot(transactional_db: None) -> None:
    # given: an app's value of a slot about participant p-a, and two runs of p-a
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    agent = declare(factories.agent_create(tenant))
    agent.memory_declarations = [{"type": "plan", "scope": "participant", "keep_days": 30}]
    agent.save()
    run = factories.run_create(app, project, agent=agent, participant_id="p-a")
    reader = factories.run_create(app, project, agent=agent, participant_id="p-a")
    scope = {"project_id": str(project.id), "participant_id": "p-a"}
    holder = services.fact_create(
        principal=app.principal, type="plan", key=KEY, content=OLD, scope=scope
    ).revision
    file = memory(
        "mcp-file",
        json.dumps(NEW),
        entityId=KEY,
        kind="plan",
        kindmem={"body": "json", "key": KEY, "scope": scope},
    )

    with asgi_server() as base:

        @async_to_sync
        async def scenario() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with mcp_client(base, run.token) as agent_run:
                seen["imported"] = outcome(
                    await agent_run.call_tool("import_memory_file", {"file": file})
                )
                seen["remembered"] = outcome(
                    await agent_run.call_tool(
                        "remember",
                        {"type": "plan", "key": KEY, "text": "Free plan.", "tool_call_id": "m-1"},
                    )
                )
                seen["deleted"] = outcome(
                    await agent_run.call_tool("delete_memory", {"memory_id": str(holder.fact_id)})
                )
            async with mcp_client(base, reader.token) as other:
                seen["slot"] = outcome(await other.call_tool("list_memories", {"type": "plan"}))
            return seen

        seen = scenario()

    # then: the import and the remember are the app's fact's next values, waiting for review;
    # the delete is refused; the other run reads the app's value, alone
    [file_outcome] = seen["imported"]["files"]
    assert file_outcome["outcome"] == "superseded", seen["imported"]
    assert file_outcome["fact_id"] == str(holder.fact_id)
    assert "asserted-overwrite" in _reasons(file_outcome)
    assert seen["remembered"]["fact"]["id"] == str(holder.fact_id), seen["remembered"]
    assert seen["remembered"]["status"] == "pending-review"
    assert seen["deleted"]["error"]["code"] == "forbidden", seen["deleted"]
    assert [(f["id"], f["content"]) for f in seen["slot"]["facts"]] == [(str(holder.fact_id), OLD)]
