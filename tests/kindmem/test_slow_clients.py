"""No client can pin a worker: slow request heads, made-up and missing credentials at /mcp, and
a credential's own event streams, against real servers started as `kindmem run` starts them
(gunicorn's asgi workers for the API and the console, config/gunicorn_conf.py; uvicorn with a
head deadline for the MCP server, config/mcp_serve.py), while a valid request still answers
within a second (config/mcp_server.py)."""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import httpx
import pytest

from api.bearer import API_KEY_MARKER, PREFIX_LENGTH, SECRET_LENGTH
from tests import factories
from tests.processes import mcp_server, web_server

pytestmark = pytest.mark.slow

MCP_ACCEPT = "application/json, text/event-stream"


@dataclass
class Servers:
    rest: tuple[str, int]
    mcp: tuple[str, int]
    rest_url: str
    mcp_url: str
    key: str


def address(base: str) -> tuple[str, int]:
    host, port = base.removeprefix("http://").split(":")
    return host, int(port)


@contextmanager
def servers(env: dict[str, str] | None = None) -> Iterator[Servers]:
    tenant = factories.tenant_create()
    key = factories.admin_key_create(tenant).token
    with web_server(env=env) as rest, mcp_server(env=env) as mcp:
        yield Servers(address(rest), address(mcp), rest, mcp, key)


def made_up_token() -> str:
    return (
        API_KEY_MARKER
        + secrets.token_hex(PREFIX_LENGTH + SECRET_LENGTH)[: PREFIX_LENGTH + SECRET_LENGTH]
    )


def open_raw(server: tuple[str, int], data: bytes) -> socket.socket:
    conn = socket.create_connection(server, timeout=10)
    conn.sendall(data)
    return conn


def read_answer(conn: socket.socket) -> tuple[int, bytes]:
    """The status and body of the answer on `conn` (read until the server closes it)."""
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def get_stream_head(token: str | None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{auth}"
        "Connection: close\r\n\r\n"
    ).encode()


def timed_valid_requests(s: Servers) -> tuple[float, float]:
    """Seconds a valid REST list and a valid MCP tool call took (each answered 200)."""
    auth = {"Authorization": f"Bearer {s.key}"}
    started = time.monotonic()
    rest = httpx.get(f"{s.rest_url}/v1/facts", headers=auth, timeout=10)
    rest_seconds = time.monotonic() - started
    assert rest.status_code == 200, rest.text
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_memories", "arguments": {}},
    }
    started = time.monotonic()
    mcp = httpx.post(
        f"{s.mcp_url}/mcp", json=call, headers={**auth, "Accept": MCP_ACCEPT}, timeout=10
    )
    mcp_seconds = time.monotonic() - started
    assert mcp.status_code == 200, mcp.text
    assert mcp.json()["result"]["structuredContent"] == {"facts": [], "next_cursor": None}
    return rest_seconds, mcp_seconds


@pytest.mark.django_db(transaction=True)
def test_300_slow_or_streaming_clients_do_not_delay_a_valid_request_past_a_second() -> None:
    with servers() as s, ExitStack() as held:
        # given: 150 clients that send the start of a request head to the API and stop, 50 to
        # the MCP server, 50 GET /mcp event streams with a made-up Bearer token and 50 with
        # none (300 in all), each on its own connection
        slow_rest = [
            held.enter_context(open_raw(s.rest, b"GET /v1/facts HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
            for _ in range(150)
        ]
        slow_mcp = [
            held.enter_context(open_raw(s.mcp, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
            for _ in range(50)
        ]
        made_up = [
            held.enter_context(open_raw(s.mcp, get_stream_head(made_up_token()))) for _ in range(50)
        ]
        anonymous = [held.enter_context(open_raw(s.mcp, get_stream_head(None))) for _ in range(50)]
        # and the slow ones send one more byte of their head each, to look alive
        for conn in [*slow_rest, *slow_mcp]:
            conn.sendall(b"X")

        # when: a valid client calls the API and an MCP tool meanwhile
        rest_seconds, mcp_seconds = timed_valid_requests(s)

        # then: each answers within a second
        assert rest_seconds < 1.0, rest_seconds
        assert mcp_seconds < 1.0, mcp_seconds
        # and no stream was opened without a valid credential: each was refused, 401 in the
        # error shape, before MCP saw it
        for conn in [*made_up, *anonymous]:
            status, body = read_answer(conn)
            assert status == 401
            assert json.loads(body)["code"] == "unauthenticated"
        # and the slow heads are still open (held by no worker, refused by none)
        for conn in slow_rest[:5]:
            conn.sendall(b"-Still: here\r\n")


@pytest.mark.django_db(transaction=True)
def test_a_credential_holds_a_bounded_number_of_streams_each_closed_when_idle() -> None:
    env = {"KINDMEM_MCP_STREAMS_PER_CREDENTIAL": "2", "KINDMEM_MCP_STREAM_IDLE_SECONDS": "3"}
    with servers(env) as s, ExitStack() as held:
        # given: a valid credential's two event streams, open
        streams = [held.enter_context(open_raw(s.mcp, get_stream_head(s.key))) for _ in range(2)]
        for conn in streams:
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        # when: it opens a third
        third = held.enter_context(open_raw(s.mcp, get_stream_head(s.key)))
        status, body = read_answer(third)
        # then: it is refused, 429 in the error shape, and another credential is not
        assert status == 429
        assert json.loads(body)["code"] == "rate-limited"
        rest_seconds, mcp_seconds = timed_valid_requests(
            Servers(s.rest, s.mcp, s.rest_url, s.mcp_url, other_key())
        )
        assert max(rest_seconds, mcp_seconds) < 1.0
        # and the open streams are closed once idle for 3 s, which frees the credential's room
        started = time.monotonic()
        for conn in streams:
            conn.settimeout(15)
            while conn.recv(4096):
                pass
        assert time.monotonic() - started < 10
        again = held.enter_context(open_raw(s.mcp, get_stream_head(s.key)))
        assert again.recv(4096).startswith(b"HTTP/1.1 200")


def other_key() -> str:
    return factories.admin_key_create(factories.tenant_create("other")).token


@pytest.mark.django_db(transaction=True)
def test_mcp_bodies_that_are_too_large_or_too_slow_are_refused_in_the_error_shape() -> None:
    env = {"KINDMEM_MAX_BODY_BYTES": "2000", "KINDMEM_BODY_TIMEOUT_SECONDS": "2"}
    with servers(env) as s:
        auth = f"Authorization: Bearer {s.key}\r\n"
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: {MCP_ACCEPT}\r\n{auth}Connection: close\r\n"
        )
        # when: a body declared over the limit, one that is over it without saying so
        # (chunked), and one that stops half-way
        declared = open_raw(s.mcp, (head + "Content-Length: 5000\r\n\r\n").encode())
        chunk = b"x" * 3000
        chunked = open_raw(
            s.mcp,
            (head + "Transfer-Encoding: chunked\r\n\r\n").encode()
            + f"{len(chunk):x}\r\n".encode()
            + chunk
            + b"\r\n0\r\n\r\n",
        )
        stalled = open_raw(s.mcp, (head + "Content-Length: 100\r\n\r\n").encode() + b'{"json')
        answers = [read_answer(conn) for conn in (declared, chunked, stalled)]
        for conn in (declared, chunked, stalled):
            conn.close()
    # then: 413 `request-too-large` twice, 408 for the stalled one, each in the error shape
    assert [status for status, _ in answers] == [413, 413, 408]
    codes = [json.loads(body)["code"] for _, body in answers]
    assert codes == ["request-too-large", "request-too-large", "validation-error"]
    for _, body in answers:
        assert set(json.loads(body)) == {"code", "message", "details"}


@pytest.mark.django_db(transaction=True)
def test_a_request_head_that_never_ends_is_closed_408_and_a_whole_one_is_served() -> None:
    # given: the web with a 2 s deadline for a connection's first head
    with web_server(env={"KINDMEM_HEAD_TIMEOUT_SECONDS": "2"}) as base:
        server = address(base)
        # when: one client sends half a head, a byte more a second later, then nothing
        started = time.monotonic()
        slow = open_raw(server, b"GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(1)
        slow.sendall(b"X")
        status, body = read_answer(slow)
        # then: it is answered 408 in the error shape and closed, about 2 s after it connected
        assert status == 408
        assert json.loads(body)["code"] == "validation-error"
        assert 1.5 < time.monotonic() - started < 6
        # and a whole head sent slowly, within the deadline, is served
        whole = open_raw(server, b"GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(1)
        whole.sendall(b"Connection: close\r\n\r\n")
        status, body = read_answer(whole)
        assert status == 401
        assert json.loads(body)["code"] == "unauthenticated"


@pytest.mark.django_db(transaction=True)
def test_the_mcp_port_serves_mcp_alone_and_bounds_and_shapes_what_its_server_refuses() -> None:
    env = {"KINDMEM_HEAD_TIMEOUT_SECONDS": "2"}
    with servers(env) as s:
        # given: the MCP server's port, as `kindmem run` starts it
        # when: the API is asked for there, then it is not served (404 in the error shape)
        me = httpx.get(f"{s.mcp_url}/v1/me", headers={"Authorization": f"Bearer {s.key}"})
        assert me.status_code == 404
        assert me.json()["code"] == "not-found"
        # when: a client trickles its head a header at a time, never ending it
        started = time.monotonic()
        slow = open_raw(s.mcp, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(1)
        slow.sendall(b"X-One: 1\r\n")
        status, body = read_answer(slow)
        # then: it is answered 408 in the error shape and closed, about 2 s after it connected
        assert status == 408
        assert json.loads(body)["code"] == "validation-error"
        assert time.monotonic() - started < 6
        # and a head that is not HTTP is answered 400 in the error shape, not in text
        status, body = read_answer(open_raw(s.mcp, b"NOT HTTP AT ALL\r\n\r\n"))
        assert status == 400
        assert set(json.loads(body)) == {"code", "message", "details"}
        # and a valid tool call is served meanwhile
        assert max(timed_valid_requests(s)) < 1.0
