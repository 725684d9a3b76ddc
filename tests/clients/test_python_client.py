"""The Python client (`clients/python`, `kindmem_client`) against the real app: held against
the served schema (a method for every route, the generated types, the route each method sends),
and talking to a live gunicorn over the network.

The other tests (test_python_client_errors.py, test_python_client_flows.py) drive the client
through httpx's WSGI transport over Django's WSGI handler: the real middleware, authentication,
guards, audit and throttle, in the test's transaction. The async client goes through Django's
ASGI handler the same way. Nothing of kindmem is mocked; only the routing test answers with a
stub, to check which request each method sends.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from kindmem_client import AsyncClient, Client
from kindmem_client.operations import ITERATORS, OPERATIONS

from tests import documentation, factories
from tests.approvals.conftest import declare
from tests.clients.conftest import BASE

pytestmark = pytest.mark.usefixtures("keep_the_tests_connection")  # conftest.py


CLIENT_DIR = Path(settings.BASE_DIR) / "clients" / "python"


def load_script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, CLIENT_DIR / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def schema(api) -> dict[str, Any]:
    response = api.get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    return response.json()


# ---- held against the schema -----------------------------------------------------------------


@pytest.mark.django_db
def test_every_route_of_the_schema_has_a_client_method_sync_and_async(schema):
    # given every operation the API serves
    served = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    # then the client's table names each one, and nothing the API lacks
    assert served - OPERATIONS.keys() == set(), "routes the client lacks: add them"
    assert OPERATIONS.keys() - served == set(), "client methods for routes that are gone"
    # and both clients have each method, and an iterator for each paged list
    for name in [*OPERATIONS.values(), *ITERATORS.values()]:
        assert callable(getattr(Client, name)), name
        assert callable(getattr(AsyncClient, name)), name


@pytest.mark.django_db
def test_the_clients_types_are_the_ones_generated_from_the_served_schema(schema):
    generated = load_script("generate_types").render(schema)
    committed = (CLIENT_DIR / "src" / "kindmem_client" / "types.py").read_text()
    assert generated == committed, (
        "the API's shapes changed: run "
        "`python clients/python/scripts/generate_types.py <url>/v1/schema?format=json` (or, "
        "without a server, `python manage.py spectacular --format openapi-json --file s.json` "
        "and `generate_types.py s.json`)"
    )


def test_the_sync_client_is_the_one_written_from_the_async_client():
    unasync = load_script("unasync")
    written = {
        target.name: unasync.render(source.read_text(), target)
        for source, target in unasync.pairs()
    }
    committed = {path.name: path.read_text() for path in unasync.TARGET.glob("*.py")}
    assert written == committed, (
        "edit kindmem_client/_async/, then run `python clients/python/scripts/unasync.py`"
    )


FACT = "00000000-0000-0000-0000-0000000000f1"
RUN = "00000000-0000-0000-0000-0000000000a1"
# Arguments for each method, for the routing test.
SAMPLES: dict[str, dict[str, Any]] = {
    "me": {},
    "capabilities": {},
    "mint_run": {"agent_id": "a", "project_id": FACT},
    "list_facts": {"type": "t", "limit": 5},
    "create_fact": {"type": "t", "content": {"text": "x"}},
    "search_facts": {"query": "tea"},
    "get_fact": {"fact_id": FACT},
    "delete_fact": {"fact_id": FACT},
    "fact_revisions": {"fact_id": FACT},
    "export_facts": {"project_id": RUN, "type": "note"},
    "import_facts": {"files": b"PK\x05\x06" + bytes(18), "project_id": RUN},
    "supersede_fact": {"fact_id": FACT, "content": "x", "expected_version": 1},
    "patch_fact": {"fact_id": FACT, "patch": {"content": {"a": None}}, "expected_version": 1},
    "verify_fact": {"fact_id": FACT},
    "fact_links": {"fact_id": FACT, "hops": 2},
    "link_facts": {"fact_id": FACT, "target": RUN, "type": "about"},
    "update_link": {"fact_id": FACT, "link_id": RUN, "changes": {"confidence": None}},
    "delete_link": {"fact_id": FACT, "link_id": RUN},
    "remember": {"type": "t", "text": "x", "tool_call_id": "c"},
    "list_approvals": {"status": "pending"},
    "approve": {"approval_id": FACT},
    "reject": {"approval_id": FACT},
    "approve_and_verify": {"approval_id": FACT},
    "append_messages": {"conversation_id": "conv/1", "messages": [{"role": "user", "text": "x"}]},
    "list_messages": {"conversation_id": "conv/1", "before_sequence": 3, "limit": 2},
    "delete_message": {"conversation_id": "conv/1", "sequence": 3},
    "clear_messages": {"conversation_id": "conv/1"},
    "extract": {"conversation_id": "conv/1"},
    "extractions": {"conversation_id": "conv/1"},
    "recall": {"selections": [{"agent_id": "a"}], "mode": "list"},
    "read_log": {"run_id": RUN},
    "append_log": {"run_id": RUN, "kind": "note", "payload": {}},
    "verify_log": {"run_id": RUN},
    "start_erasure": {"target_kind": "participant", "target_id": "p", "reason": "r"},
    "get_erasure": {"erasure_id": RUN},
    "request_access_export": {"subject_kind": "participant", "subject_id": "p"},
    "get_access_request": {"request_id": RUN},
    "download_access_export": {"request_id": RUN, "token": "t"},
    "list_audit": {"since_seq": 3},
    "list_webhooks": {},
    "create_webhook": {"url": "https://example.com/hook", "events": ["fact.changed"]},
    "delete_webhook": {"endpoint_id": RUN},
}


def test_each_method_sends_the_route_its_table_names():
    # given a stub server that records what it is sent
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    client = Client("kmk_x", base_url=BASE, transport=httpx.MockTransport(answer))
    assert SAMPLES.keys() == set(OPERATIONS.values())
    for (method, template), name in OPERATIONS.items():
        # when the method is called
        getattr(client, name)(**SAMPLES[name])
        request = sent.pop()
        # then it sent that method to a path of that template, with the credential
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template))
        assert request.method == method, name
        assert re.fullmatch(pattern, request.url.raw_path.decode().split("?")[0]), name
        assert request.headers["Authorization"] == "Bearer kmk_x"
    # and an id is one path segment, whatever it holds
    client.append_messages("conv/1", [{"role": "user", "text": "x"}])
    assert sent.pop().url.raw_path == b"/v1/conversations/conv%2F1/messages"


# ---- async, and a live server -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_client_talks_to_a_live_gunicorn(capsys):
    from tests.processes import web_server

    # given a tenant and an agent's run, committed for the server's own processes
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app_key = factories.app_key_create(tenant, [project])
    declare(factories.agent_create(tenant))
    with web_server() as base, Client(app_key.token, base_url=base) as app:
        run = app.mint_run(agent_id="support-bot", project_id=project.id, participant_id="p-4")
        agent = app.with_token(run["token"])
        # when the agent remembers and lists, over the network
        agent.remember(type="preference", text="prefers email", tool_call_id="c-1")
        listed = [f["content"] for f in agent.iter_facts()]

        async def listed_async() -> list[Any]:
            async with AsyncClient(run["token"], base_url=base) as same:
                return [f["content"] async for f in same.iter_facts()]

        # then sync and async clients see the same fact (the async one on a loop of its own
        # thread: the session's browser may hold this thread's loop; it only speaks HTTP)
        assert listed == [{"text": "prefers email"}]
        with ThreadPoolExecutor(max_workers=1) as own_thread:
            assert own_thread.submit(asyncio.run, listed_async()).result() == listed
        # and the docs' example does what it says
        capsys.readouterr()
        exec(  # noqa: S102 - the docs' own example, run as a reader would
            documentation.block("Python client", "python"),
            {"APP_KEY": app_key.token, "URL": base, "PROJECT": str(project.id)},
        )
        assert capsys.readouterr().out.splitlines() == [
            "1 {'text': 'Prefers email'}",
            "fact-not-found 404",
        ]
