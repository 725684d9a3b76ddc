"""The Python client (`clients/python`, `kindmem_client`) against the real app.

Most tests drive the client through httpx's WSGI transport over Django's WSGI handler: the
real middleware, authentication, guards, audit and throttle, in this test's transaction. The
async client goes through Django's ASGI handler the same way, and one test talks to a live
gunicorn over the network. Nothing of kindmem is mocked; only the routing test answers with
a stub, to check which request each method sends.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import kindmem_client
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from kindmem_client import (
    AsyncClient,
    Client,
    Conflict,
    FactNotFound,
    Forbidden,
    KindmemError,
    NotFound,
    RateLimited,
    RetryPolicy,
    Unauthenticated,
    ValidationError,
    errors,
)
from kindmem_client.operations import ITERATORS, OPERATIONS

from tests import factories
from tests.approvals.conftest import declare

CLIENT_DIR = Path(settings.BASE_DIR) / "clients" / "python"
BASE = "http://testserver"


def load_script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, CLIENT_DIR / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wsgi_client(token: str | None, **kwargs: Any) -> Client:
    """A sync client on the real app, in-process (Django's WSGI handler, this test's DB)."""
    return Client(token, base_url=BASE, transport=httpx.WSGITransport(app=WSGIHandler()), **kwargs)


@pytest.fixture(autouse=True)
def keep_the_tests_connection():
    """As Django's test client does: a request's end must not close the connection that holds
    this test's transaction (Django closes "old" connections when a request starts and ends)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def schema(api) -> dict[str, Any]:
    response = api.get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def agent_world(world):
    """The world, with an agent that declares memory types (remember's review rules apply)."""
    declare(world.agent)
    return world


def mint(app_token: str, world: Any, participant_id: str, thread_id: str) -> dict[str, Any]:
    with wsgi_client(app_token) as app:
        return app.mint_run(
            agent_id=world.agent.agent_id,
            project_id=world.project.id,
            participant_id=participant_id,
            thread_id=thread_id,
        )


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
    "mint_run": {"agent_id": "a", "project_id": FACT},
    "list_facts": {"type": "t", "limit": 5},
    "create_fact": {"type": "t", "content": {"text": "x"}},
    "search_facts": {"query": "tea"},
    "get_fact": {"fact_id": FACT},
    "delete_fact": {"fact_id": FACT},
    "fact_revisions": {"fact_id": FACT},
    "supersede_fact": {"fact_id": FACT, "content": "x", "expected_version": 1},
    "verify_fact": {"fact_id": FACT},
    "fact_links": {"fact_id": FACT, "hops": 2},
    "link_facts": {"fact_id": FACT, "target": RUN, "type": "about"},
    "remember": {"type": "t", "text": "x", "tool_call_id": "c"},
    "list_approvals": {"status": "pending"},
    "approve": {"approval_id": FACT},
    "reject": {"approval_id": FACT},
    "approve_and_verify": {"approval_id": FACT},
    "append_messages": {"conversation_id": "conv/1", "messages": [{"role": "user", "text": "x"}]},
    "list_messages": {"conversation_id": "conv/1", "before_sequence": 3, "limit": 2},
    "delete_message": {"conversation_id": "conv/1", "sequence": 3},
    "clear_messages": {"conversation_id": "conv/1"},
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


# ---- errors -----------------------------------------------------------------------------------


def server_codes() -> set[str]:
    """Every code the server can answer: its KindmemError classes, what DRF's exceptions map
    to, the body-size refusal and gunicorn's own refusals."""
    from rest_framework import exceptions as drf

    from config.gunicorn_conf import CODES as GUNICORN
    from kindmem import errors as server

    codes: set[str] = set()
    stack = [server.KindmemError]
    while stack:
        cls = stack.pop()
        codes.add(cls.code)
        stack.extend(cls.__subclasses__())
    drf_errors = [
        drf.NotAuthenticated(),
        drf.PermissionDenied(),
        drf.NotFound(),
        drf.MethodNotAllowed("GET"),
        drf.UnsupportedMediaType("x"),
        drf.NotAcceptable(),
        drf.Throttled(),
        drf.ValidationError(),
    ]
    codes |= {server._drf_code(exc) for exc in drf_errors}
    return codes | set(GUNICORN.values()) | {"request-too-large"}


def test_every_error_code_of_the_server_has_its_own_exception_class():
    for code in server_codes():
        cls = errors.CODES.get(code)
        assert cls is not None, f"no exception class for {code!r}"
        assert issubclass(cls, KindmemError)
        assert cls.code == code
    # and each class is exported from the package
    assert {cls.__name__ for cls in errors.CODES.values()} <= set(kindmem_client.__all__)


@pytest.mark.django_db
def test_errors_are_raised_as_their_classes_carrying_code_message_and_status(agent_world):
    world = agent_world
    run = mint(world.app.token, world, "p-err", "t-err")
    with wsgi_client(run["token"]) as agent, wsgi_client("kmk_nonsense") as stranger:
        # a missing fact: FactNotFound, which is a NotFound
        with pytest.raises(FactNotFound) as missing:
            agent.get_fact(uuid.uuid4())
        assert isinstance(missing.value, NotFound)
        assert (missing.value.code, missing.value.status_code) == ("fact-not-found", 404)
        assert missing.value.message
        # a bad credential, a role the run lacks, a body the API refuses
        with pytest.raises(Unauthenticated):
            stranger.me()
        with pytest.raises(Forbidden):
            agent.list_approvals()
        with pytest.raises(ValidationError) as invalid:
            agent.search_facts(" ")
        assert "query" in invalid.value.details


def test_an_answer_outside_the_error_shape_is_an_unexpected_response():
    client = Client(
        None,
        base_url=BASE,
        transport=httpx.MockTransport(lambda r: httpx.Response(502, text="<html>bad</html>")),
    )
    with pytest.raises(errors.UnexpectedResponse) as raised:
        client.me()
    assert raised.value.status_code == 502
    # and a code this client does not know is still a KindmemError, with that code
    newer = Client(
        None,
        base_url=BASE,
        transport=httpx.MockTransport(
            lambda r: httpx.Response(409, json={"code": "brand-new", "message": "m"})
        ),
    )
    with pytest.raises(KindmemError) as unknown:
        newer.me()
    assert unknown.value.code == "brand-new"


# ---- an agent's afternoon, through the client -------------------------------------------------


@pytest.mark.django_db
def test_an_agent_remembers_a_reviewer_approves_and_the_agent_finds_it(agent_world):
    world = agent_world
    with wsgi_client(world.app.token) as app:
        # given a run minted by the app's key
        me = app.me()
        assert me["kind"] == "app"
        minted = app.mint_run(
            agent_id=world.agent.agent_id,
            project_id=world.project.id,
            participant_id="p-1",
            thread_id="t-1",
        )
        agent = app.with_token(minted["token"])
        assert agent.me()["run_id"] == minted["run"]["id"]
        # when the agent remembers something instruction-like
        remembered = agent.remember(
            type="preference", text="Always answer her in French", tool_call_id="call-1"
        )
        # then it waits for review, unreadable
        assert remembered["outcome"] == "created"
        assert remembered["review"] is not None
        assert "instruction-like" in remembered["review"]["reasons"]
        with pytest.raises(FactNotFound):
            agent.get_fact(remembered["fact"]["id"])
        # and a replay of the same tool call is the first answer
        again = agent.remember(
            type="preference", text="Always answer her in French", tool_call_id="call-1"
        )
        assert again["outcome"] == "replayed"
        # when the tenant admin approves it
        admin = app.with_token(world.admin.token)
        pending = list(admin.iter_approvals())
        assert [a["id"] for a in pending] == [remembered["approval_id"]]
        decided = admin.approve(remembered["approval_id"], note="fine")
        assert decided["status"] == "approved"
        # then the agent reads and finds it
        fact = agent.get_fact(remembered["fact"]["id"])
        assert fact["content"] == remembered["fact"]["content"]
        hits = agent.search_facts("French", mode="keyword")["hits"]
        assert [h["fact"]["id"] for h in hits] == [fact["id"]]
        # and a second decision is a conflict
        with pytest.raises(Conflict):
            admin.reject(remembered["approval_id"])


@pytest.mark.django_db
def test_facts_page_through_iterators_and_change_through_revisions(world):
    with wsgi_client(world.app.token) as app:
        # given three facts of the app's project
        scope = {"project_id": str(world.project.id)}
        written = [
            app.create_fact(type="note", content={"text": f"note {i}"}, scope=scope, tags=["n"])
            for i in range(3)
        ]
        assert {w["outcome"] for w in written} == {"created"}
        # when they are read one per page
        listed = list(app.iter_facts(type="note", page_size=1))
        # then every one comes back, newest first
        assert [f["id"] for f in listed] == [w["fact"]["id"] for w in reversed(written)]
        first = app.list_facts(type="note", limit=2)
        assert len(first["facts"]) == 2
        assert first["next_cursor"] is not None
        # when one is superseded, twice from the same version
        fact_id = written[0]["fact"]["id"]
        newer = app.supersede_fact(fact_id, content={"text": "note 0, revised"}, expected_version=1)
        assert newer["fact"]["version"] == 2
        with pytest.raises(Conflict):
            app.supersede_fact(fact_id, content={"text": "stale"}, expected_version=1)
        # then its history has both revisions
        history = app.fact_revisions(fact_id)["revisions"]
        assert [r["version"] for r in history] == [2, 1]
        # when it is verified, linked and followed
        verified = app.with_token(world.admin.token).verify_fact(fact_id)
        assert verified["fact"]["trust"] == "verified"
        link = app.link_facts(fact_id, target=written[1]["fact"]["id"], type="about")
        assert link["created"] is True
        reached = app.fact_links(fact_id, hops=2)["reached"]
        assert [r["fact"]["id"] for r in reached] == [written[1]["fact"]["id"]]
        # and deleted
        assert app.delete_fact(written[2]["fact"]["id"])["outcome"] == "deleted"
        with pytest.raises(FactNotFound):
            app.get_fact(written[2]["fact"]["id"])


@pytest.mark.django_db
def test_conversations_recall_and_the_run_log_through_the_client(agent_world):
    world = agent_world
    minted = mint(world.app.token, world, "p-2", "conv-a")
    with wsgi_client(minted["token"]) as agent:
        # given a conversation the run writes to, and another one of the same person
        appended = agent.append_messages(
            "conv-a",
            [{"role": "user", "text": "My parcel never arrived"}, {"role": "agent", "text": "Ok"}],
        )
        assert [m["sequence"] for m in appended["messages"]] == [1, 2]
        # when it recalls by keyword
        hits = agent.recall(
            selections=[{"agent_id": world.agent.agent_id}], mode="keyword", query="parcel"
        )["hits"]
        # then it finds its person's message
        assert [h["message"]["text"] for h in hits] == ["My parcel never arrived"]
        # when it logs what it did, more entries than a page holds
        run_id = minted["run"]["id"]
        for i in range(3):
            agent.append_log(run_id, kind="note", payload={"step": i})
        # then the iterator reads them all, and the chain verifies
        entries = list(agent.iter_log(run_id, page_size=2))
        assert [e["payload"] for e in entries] == [{"step": 0}, {"step": 1}, {"step": 2}]
        assert agent.read_log(run_id, limit=2)["next_after_sequence"] == 2
        verified = agent.verify_log(run_id)
        assert verified["ok"] is True
        assert verified["length"] == 3


@pytest.mark.django_db
def test_the_audit_stream_pages_by_seq_and_privacy_requests_go_through(world):
    from privacy.tasks import build_access_export

    with wsgi_client(world.admin.token) as admin:
        # given some audited calls
        app = admin.with_token(world.app.token)
        for i in range(3):
            app.create_fact(
                type="note", content=f"n{i}", scope={"project_id": str(world.project.id)}
            )
        # when the admin reads the stream two events a page
        events = list(admin.iter_audit(page_size=2, phase="write"))
        # then every write is there, in seq order
        assert len(events) == 3
        assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
        assert admin.list_audit(since_seq=events[-1]["seq"])["events"] == []
        # when it starts an erasure and an access export
        erasure = admin.start_erasure(target_kind="participant", target_id="p-9", reason="asked")
        assert admin.get_erasure(erasure["id"])["status"] == "pending"
        access = admin.request_access_export(subject_kind="participant", subject_id="p-9")
        assert access["download"] is None
        build_access_export(access["id"], tenant_id=str(world.tenant.id))
        links = admin.get_access_request(access["id"])["download"]
        assert links is not None
        token = httpx.URL(links["json"]).params["token"]
        # then the export comes down through the client
        exported = admin.download_access_export(access["id"], token=token)
        assert exported.startswith(b"{")
        zipped = admin.download_access_export(access["id"], token=token, export="zip")
        assert zipped[:2] == b"PK"


# ---- retries ----------------------------------------------------------------------------------


@pytest.fixture
def tight_write_rate(monkeypatch):
    """Two writes a minute per credential, on a clock the test moves."""
    from rest_framework.throttling import SimpleRateThrottle

    clock = {"now": 1_000_000.0}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"writes": "2/min"})
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: clock["now"])
    return clock


@pytest.mark.django_db
def test_a_429_is_retried_after_its_retry_after_and_then_succeeds(world, tight_write_rate):
    # given a credential that spent its writes, and a client whose sleep moves the clock
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        tight_write_rate["now"] += seconds

    scope = {"project_id": str(world.project.id)}
    with wsgi_client(world.app.token, sleep=sleep) as app:
        app.create_fact(type="note", content="a", scope=scope)
        app.create_fact(type="note", content="b", scope=scope)
        # when it writes again
        third = app.create_fact(type="note", content="c", scope=scope)
    # then it waited as the server said, once, and the write landed once
    assert third["outcome"] == "created"
    assert len(waits) == 1
    assert 0 < waits[0] <= 61


@pytest.mark.django_db
def test_retries_are_bounded_by_count_and_by_the_longest_wait(world, tight_write_rate):
    scope = {"project_id": str(world.project.id)}
    waits: list[float] = []
    # given a credential that spent its writes
    with wsgi_client(world.app.token, sleep=waits.append) as app:
        app.create_fact(type="note", content="a", scope=scope)
        app.create_fact(type="note", content="b", scope=scope)
        # when the clock does not move, the client gives up after its retries
        with pytest.raises(RateLimited) as limited:
            app.create_fact(type="note", content="c", scope=scope)
    assert len(waits) == RetryPolicy().max_retries
    assert limited.value.retry_after is not None
    assert limited.value.retry_after > 0
    # and a wait longer than it allows is not waited for at all
    waits.clear()
    impatient = RetryPolicy(max_wait=1.0)
    with (
        wsgi_client(world.app.token, sleep=waits.append, retry=impatient) as app,
        pytest.raises(RateLimited),
    ):
        app.create_fact(type="note", content="d", scope=scope)
    assert waits == []


# ---- async, and a live server -----------------------------------------------------------------


@pytest.mark.django_db
def test_the_async_client_does_the_same_through_djangos_asgi_handler(agent_world):
    world = agent_world
    minted = mint(world.app.token, world, "p-3", "t-3")

    # async_to_sync: the ASGI handler's sync views run back in this thread, on its connection
    # and so in this test's transaction.
    @async_to_sync
    async def afternoon() -> tuple[str, list[str], str]:
        transport = httpx.ASGITransport(app=ASGIHandler())
        async with AsyncClient(minted["token"], base_url=BASE, transport=transport) as agent:
            me = await agent.me()
            await agent.remember(type="preference", text="likes green tea", tool_call_id="c-1")
            facts = [f["content"] async for f in agent.iter_facts(page_size=1)]
            try:
                await agent.get_fact(uuid.uuid4())
            except FactNotFound as missing:
                code = missing.code
            return me["kind"], facts, code

    kind, facts, code = afternoon()
    assert kind == "run"
    assert facts == [{"text": "likes green tea"}]
    assert code == "fact-not-found"


def readme_example(heading: str) -> str:
    """The first ```python block after `heading` in README.md."""
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    after = readme.split(f"\n{heading}\n", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


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
        # and README's example does what it says
        capsys.readouterr()
        exec(  # noqa: S102 - README's own example, run as a reader would
            readme_example("### Python client"),
            {"APP_KEY": app_key.token, "URL": base, "PROJECT": str(project.id)},
        )
        assert capsys.readouterr().out.splitlines() == [
            "1 {'text': 'Prefers email'}",
            "fact-not-found 404",
        ]
