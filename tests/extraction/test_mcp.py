"""extract_memories and extractions over MCP (a live ASGI server, the SDK's own client): each
is its REST route, with the caller's credential, its guard and its errors."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from extraction.models import ExtractionJob
from extraction.tasks import extract_conversation
from tests import factories
from tests.extraction.conftest import DECLARATIONS, add
from tests.kindmem.test_mcp import mcp_client, outcome
from tests.processes import asgi_server
from tests.recall.conftest import conversation_create


@pytest.mark.django_db(transaction=True)
def test_an_agent_extracts_its_conversation_over_mcp_and_reads_how_it_went(llm):
    # given a conversation of p-a, and runs for p-a and for another person
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    agent = factories.agent_create(tenant)
    agent.memory_declarations = DECLARATIONS
    agent.save()
    app = factories.app_key_create(tenant, [project])
    world = type("W", (), {"tenant": tenant, "project": project, "app": app})
    conversation_create(world, "t-a", ("user", "I prefer email."), participant_id="p-a")
    run_a = factories.run_create(app, project, participant_id="p-a", thread_id="t-a")
    run_b = factories.run_create(app, project, participant_id="p-b", thread_id="t-b")
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    env = {"KINDMEM_LLM_URL": llm.url, "KINDMEM_LLM_MODEL": "fake-llm-1"}

    with asgi_server(env=env) as base:

        @async_to_sync
        async def ask() -> dict[str, Any]:
            async with mcp_client(base, run_a.token) as agent_a:
                asked = outcome(
                    await agent_a.call_tool("extract_memories", {"conversation_id": "t-a"})
                )
            async with mcp_client(base, run_b.token) as agent_b:
                foreign = outcome(
                    await agent_b.call_tool("extract_memories", {"conversation_id": "t-a"})
                )
            return {"asked": asked, "foreign": foreign}

        seen = ask()
        # (the worker's part, here: the job the tool queued)
        job = ExtractionJob.objects.get()
        extract_conversation(str(job.id), tenant_id=str(tenant.id))

        @async_to_sync
        async def read() -> dict[str, Any]:
            async with mcp_client(base, run_a.token) as agent_a:
                return outcome(await agent_a.call_tool("extractions", {"conversation_id": "t-a"}))

        state = read()
    assert seen["asked"]["outcome"] == "queued"
    assert seen["asked"]["job"]["id"] == str(job.id)
    assert seen["foreign"] == {
        "error": {"code": "not-found", "message": "No such conversation.", "details": None}
    }
    assert state["extracted_through"] == 1
    [done] = state["jobs"]
    assert done["status"] == "applied"
    assert [d["text"] for d in done["decisions"]] == ["Prefers email."]
