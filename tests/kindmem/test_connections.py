"""Connection discipline under attack: a stream of MCP calls, with valid, revoked and made-up
credentials, many at once, holds no more database connections than the process's pool allows;
the REST API and a real worker keep answering meanwhile; a saturated pool answers 503 with
Retry-After, never 500 (config/pool.py, config/admission.py, api/errors.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from kindmem.models import ApiKey, WorkerHeartbeat
from kindmem.tasks import record_heartbeat
from tests import factories
from tests.approvals.conftest import declare
from tests.kindmem.test_worker import _start_worker
from tests.processes import asgi_server, web_server

pytestmark = pytest.mark.slow

POOL_MAX = 3
SECRET = "Tenant A's customer p-1 prefers the zqsecret plan."
# the pool's requests' connections and the write throttle's (config/settings_database.py: 2)
BOUND = POOL_MAX + 2


@dataclass
class Credentials:
    valid: str
    revoked: str
    other_tenant: str
    made_up: list[str]


@pytest.fixture
def credentials(transactional_db: None) -> Credentials:
    """Committed for the servers' own processes: a run token of tenant A, a revoked key of A,
    an admin key of tenant B, and well-formed and malformed tokens no one minted."""
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    agent = declare(factories.agent_create(tenant))
    run = factories.run_create(app, project, agent=agent, participant_id="p-1", thread_id="t-1")
    secret = factories.fact_create(tenant, project_id=project.pk, participant_id="p-1")
    factories.revision_create(secret, content=SECRET)
    revoked = factories.admin_key_create(tenant)
    ApiKey.objects.filter(pk=revoked.key.pk).update(revoked_at=timezone.now())
    other = factories.admin_key_create(factories.tenant_create("other"))
    made_up = [
        "kmk_not-a-key",
        "kmr_" + "x" * 52,
        *(f"kmk_{uuid.uuid4().hex[:12]}{'a' * 40}" for _ in range(3)),
    ]
    return Credentials(run.token, revoked.token, other.token, made_up)


@dataclass
class Peak:
    """The most connections an application name held, sampled while a block runs."""

    application_name: str
    samples: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def count(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                [self.application_name],
            )
            return cursor.fetchone()[0]

    @property
    def most(self) -> int:
        return max(self.samples, default=0)


@pytest.fixture
def sampled() -> Iterator[Any]:
    """Start sampling an application name's connections in a thread of the test's own."""
    from django.db import connections

    running: list[tuple[Peak, threading.Thread]] = []

    def start(application_name: str) -> Peak:
        peak = Peak(application_name)

        def sample() -> None:
            try:
                while not peak._stop.is_set():
                    peak.samples.append(peak.count())
                    time.sleep(0.02)
            finally:
                connections.close_all()

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        running.append((peak, thread))
        return peak

    yield start
    for peak, thread in running:
        peak._stop.set()
        thread.join(timeout=10)


def tool_call(name: str, arguments: dict[str, Any], call_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def hammer(base: str, tokens: list[str], calls: int) -> list[tuple[str, int, Any]]:
    """`calls` MCP tool calls at once, round robin over `tokens`: (token, status, body) each."""
    limits = httpx.Limits(max_connections=calls, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:

        async def one(i: int) -> tuple[str, int, Any]:
            token = tokens[i % len(tokens)]
            answer = await http.post(
                f"{base}/mcp",
                json=tool_call("list_memories", {}, i),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                },
            )
            return token, answer.status_code, answer.json(), answer.headers.get("retry-after")

        return await asyncio.gather(*(one(i) for i in range(calls)))


def test_500_mcp_calls_at_once_with_any_credential_hold_no_more_than_the_pool(
    credentials: Credentials, sampled: Any, worker_broker: Any, tmp_path: Any
) -> None:
    # given: the MCP server (one ASGI process, a pool of 3), the REST API and a real worker
    name = f"kindmem-test-{uuid.uuid4().hex[:8]}"
    env = {"KINDMEM_APPLICATION_NAME": name, "KINDMEM_DATABASE_POOL_MAX": str(POOL_MAX)}
    worker = _start_worker(tmp_path, worker_broker.url)
    try:
        with asgi_server(env=env) as mcp, web_server() as rest:
            peak = sampled(name)
            tokens = [
                credentials.valid,
                credentials.revoked,
                credentials.other_tenant,
                *credentials.made_up,
            ]
            # when: 500 tool calls arrive at once, while REST calls and a task go on beside them
            rest_answers: list[int] = []
            beside_started = threading.Event()

            def beside() -> None:
                beside_started.set()
                with httpx.Client(timeout=30) as client:
                    for _ in range(10):
                        me = client.get(
                            f"{rest}/v1/me",
                            headers={"Authorization": f"Bearer {credentials.valid}"},
                        )
                        rest_answers.append(me.status_code)

            token = uuid.uuid4().hex
            record_heartbeat.apply_async(args=[token], connection=worker_broker.connection)
            rest_thread = threading.Thread(target=beside)
            rest_thread.start()
            beside_started.wait()
            answers = asyncio.run(hammer(mcp, tokens, 500))
            rest_thread.join(timeout=60)
            after = peak.count()
        deadline = time.monotonic() + 60
        while not WorkerHeartbeat.objects.filter(token=token).exists():
            assert time.monotonic() < deadline, "the worker did not run its task meanwhile"
            time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(timeout=30)

    # then: never a 500; every call answered as its credential deserves, or shed with
    # Retry-After; no revoked, foreign or made-up credential read anything
    statuses = {status for _, status, _, _ in answers}
    assert statuses <= {200, 401, 429, 503}, statuses
    for token, status, body, retry_after in answers:
        if status == 401:  # refused before MCP saw it: no stream, no tool call
            assert token not in (credentials.valid, credentials.other_tenant), token
            assert body["code"] == "unauthenticated"
            continue
        if status != 200:
            assert body["code"] in {"unavailable", "rate-limited"}
            assert retry_after is not None
            continue
        result = body["result"]
        if result["isError"]:
            expected = {"unavailable", "rate-limited"}
            if token != credentials.valid and token != credentials.other_tenant:
                expected.add("unauthenticated")
            assert result["structuredContent"]["code"] in expected, (token, result)
        elif token == credentials.valid:
            assert [f["content"] for f in result["structuredContent"]["facts"]] == [SECRET]
        else:  # another tenant's valid key lists its own tenant: nothing of A
            assert token == credentials.other_tenant, (token, result)
            assert SECRET not in json.dumps(result)
    served = [b for t, s, b, _ in answers if t == credentials.valid and s == 200]
    assert any(not b["result"]["isError"] for b in served), "no valid call was served at all"
    # and the process never held more connections than its pools allow, then or after
    assert peak.samples, "the connections were never sampled"
    assert peak.most <= BOUND, peak.samples
    assert after <= BOUND
    # and the REST API answered every call meanwhile (the worker ran its task: above)
    assert rest_answers == [200] * 10


def test_two_tenants_interleaved_on_one_pooled_connection_see_only_their_own(
    transactional_db: None, sampled: Any
) -> None:
    # given: two tenants with a fact each, and an ASGI process whose pool has one connection
    keys = {}
    for name in ("a", "b"):
        tenant = factories.tenant_create(name)
        fact = factories.fact_create(tenant)
        factories.revision_create(fact, content=f"only tenant {name} may read zq{name}")
        keys[name] = factories.admin_key_create(tenant).token
    application_name = f"kindmem-test-{uuid.uuid4().hex[:8]}"
    env = {"KINDMEM_APPLICATION_NAME": application_name, "KINDMEM_DATABASE_POOL_MAX": "1"}
    with asgi_server(env=env) as base, httpx.Client(base_url=base, timeout=30) as http:
        peak = sampled(application_name)
        seen: list[tuple[str, list[str]]] = []
        # when: their requests alternate with made-up credentials and refused requests
        for _ in range(10):
            for name in ("a", "b"):
                auth = {"Authorization": f"Bearer {keys[name]}"}
                listed = http.get("/v1/facts", headers=auth)
                seen.append((name, [f["content"] for f in listed.json()["facts"]]))
                # a refused request after the credential was entered (400), then a stranger
                assert http.get("/v1/facts?limit=0", headers=auth).status_code == 400
                stranger = {"Authorization": f"Bearer kmk_{uuid.uuid4().hex[:12]}{'b' * 40}"}
                assert http.get("/v1/facts", headers=stranger).status_code == 401
    # then: each saw exactly its own fact, on the one connection the pool had for requests
    assert seen == [
        (name, [f"only tenant {name} may read zq{name}"]) for _ in range(10) for name in "ab"
    ]
    assert peak.most <= 1 + 2  # and the throttle's pool (which reads never use)


def test_a_pooled_connection_comes_back_with_no_tenant_whatever_the_request_left() -> None:
    # given: a pool of one connection to the test database, with kindmem's reset
    from psycopg_pool import ConnectionPool

    from config.pool import reset

    with ConnectionPool(kwargs=lock_params(), min_size=1, max_size=1, reset=reset) as pool:
        # when: a request enters a tenant and the app role and returns the connection as is
        with pool.connection() as conn:
            first = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            conn.execute(
                "SELECT set_config('role', %s, false), set_config('app.tenant_id', %s, false),"
                " set_config('app.all_tenants', 'on', false)",
                [settings.KINDMEM_APP_ROLE, str(uuid.uuid4())],
            )
        # then: the next request gets the same connection with nothing of it
        with pool.connection() as conn:
            row = conn.execute(
                "SELECT pg_backend_pid(), current_user = session_user,"
                " current_setting('app.tenant_id'), current_setting('app.all_tenants')"
            ).fetchone()
    assert row == (first, True, "", "off")


def test_a_request_that_finds_the_pool_busy_is_answered_503_with_retry_after(
    credentials: Credentials,
) -> None:
    # given: an ASGI process with one pooled connection, a request of which is stuck behind a
    # lock the test holds (it keeps the connection), and a short wait for a connection
    env = {"KINDMEM_DATABASE_POOL_MAX": "1", "KINDMEM_DATABASE_POOL_TIMEOUT": "0.5"}
    auth = {"Authorization": f"Bearer {credentials.valid}"}
    with asgi_server(env=env) as base, httpx.Client(base_url=base, timeout=30) as http:
        locker = psycopg.connect(**lock_params(), autocommit=False)
        try:
            locker.execute("LOCK TABLE kindmem_run IN ACCESS EXCLUSIVE MODE")
            stuck_answers: list[httpx.Response] = []
            stuck = threading.Thread(
                target=lambda: stuck_answers.append(http.get("/v1/me", headers=auth))
            )
            stuck.start()
            wait_until_waiting_on_a_lock()
            # when: another request comes
            shed = http.get("/v1/facts", headers=auth)
            mcp = http.post(
                "/mcp",
                json=tool_call("list_memories", {}, 1),
                headers={**auth, "Accept": "application/json, text/event-stream"},
            )
        finally:
            locker.rollback()
            locker.close()
        stuck.join(timeout=30)
    # then: it is answered 503 `unavailable` with Retry-After, in the error shape; so is an MCP
    # call, whose credential could not be looked up before it was opened; the stuck one is
    # answered once the lock goes
    assert shed.status_code == 503
    assert shed.headers["retry-after"] == "1"
    assert shed.json()["code"] == "unavailable"
    assert mcp.status_code == 503
    assert mcp.headers["retry-after"] == "1"
    assert mcp.json()["code"] == "unavailable"
    assert [r.status_code for r in stuck_answers] == [200]


def lock_params() -> dict[str, Any]:
    return {
        k: v
        for k, v in connection.get_connection_params().items()
        if k not in {"cursor_factory", "context", "prepare_threshold"}
    }


def wait_until_waiting_on_a_lock() -> None:
    deadline = time.monotonic() + 30
    with psycopg.connect(**lock_params(), autocommit=True) as probe:
        while not probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        ).fetchone()[0]:
            assert time.monotonic() < deadline, "the request never reached the lock"
            time.sleep(0.05)
