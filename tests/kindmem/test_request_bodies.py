"""Request bodies in the ASGI process (config/request_bodies.py), through a real uvicorn: a chunked
body, which declares no length, is counted as it arrives and refused past
KINDMEM_MAX_BODY_BYTES in the error shape, REST and MCP alike; one within it reaches the app; one
that stops half-way is answered 408 after KINDMEM_BODY_TIMEOUT_SECONDS, holding no in-flight slot
meanwhile."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from facts.models import Fact
from tests.processes import asgi_server

LIMIT = 65_536

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def asgi(django_db_setup, django_db_blocker) -> Iterator[tuple[str, int]]:
    with (
        django_db_blocker.unblock(),
        asgi_server(env={"KINDMEM_MAX_BODY_BYTES": str(LIMIT)}) as base,
    ):
        split = urlsplit(base)
        yield split.hostname or "127.0.0.1", split.port or 80


def exchange(server: tuple[str, int], head: bytes, body: bytes) -> tuple[int, dict, bytes]:
    """Send a request as is, read the answer to the end: its status, headers and body."""
    with socket.create_connection(server, timeout=30) as conn:
        conn.sendall(head + body)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    top, _, content = answer.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
    return int(status_line.split()[1]), headers, content


def chunked(data: bytes, size: int = 8192) -> bytes:
    parts = [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def post(path: str, extra: bytes = b"") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n".encode()
        + b"Authorization: Bearer kmk_made_up\r\n"
        + extra
        + b"Connection: close\r\n\r\n"
    )


def test_a_chunked_body_past_the_limit_is_refused_in_the_error_shape(asgi):
    # given a JSON body just past the limit, sent chunked: no length to check beforehand
    body = json.dumps({"type": "note", "content": "x" * LIMIT}).encode()
    # when it is posted
    status, headers, content = exchange(
        asgi, post("/v1/facts", b"Transfer-Encoding: chunked\r\n"), chunked(body)
    )
    # then it is refused, 413 in the error shape naming the limit, and nothing is written
    assert status == 413, content
    assert headers["content-type"] == "application/json"
    error = json.loads(content)
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "request-too-large"
    assert error["details"] == {"limit": LIMIT, "setting": "KINDMEM_MAX_BODY_BYTES"}
    assert Fact.objects.count() == 0


def test_an_mcp_body_of_a_made_up_credential_is_refused_before_it_is_read(asgi):
    # given a chunked MCP body past the limit, with a made-up credential
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * LIMIT}).encode()
    # when it is posted, then the credential is refused (401 in the error shape), not the body:
    # MCP reads no body before its credential is checked (config/mcp_server.py)
    status, _, content = exchange(
        asgi, post("/mcp", b"Transfer-Encoding: chunked\r\n"), chunked(body)
    )
    assert status == 401, content
    assert json.loads(content)["code"] == "unauthenticated"


def test_a_declared_mcp_body_past_the_limit_is_in_the_error_shape_too(asgi):
    # given an MCP call whose declared length is past the limit (the SDK answered plain text)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * LIMIT}).encode()
    head = post("/mcp", f"Content-Length: {len(body)}\r\n".encode())
    # when it is posted, then it is 413 in the error shape
    status, headers, content = exchange(asgi, head, body)
    assert status == 413, content
    assert headers["content-type"] == "application/json"
    assert json.loads(content)["code"] == "request-too-large"


def test_a_chunked_body_within_the_limit_reaches_the_app(asgi):
    # given a small JSON body, sent chunked, with a made-up credential
    body = json.dumps({"type": "note", "content": "tea"}).encode()
    # when it is posted, then Django answers it (the credential), not the body's bound
    status, _, content = exchange(
        asgi, post("/v1/facts", b"Transfer-Encoding: chunked\r\n"), chunked(body, 7)
    )
    assert status == 401, content
    assert json.loads(content)["code"] == "unauthenticated"


def test_a_body_that_stops_half_way_is_408_and_holds_no_slot_meanwhile(django_db_blocker):
    # given an ASGI process admitting two requests at a time (one to spare for a start-up probe
    # a loaded machine may still be answering), waiting 2 s for a body
    env = {"KINDMEM_BODY_TIMEOUT_SECONDS": "2", "KINDMEM_MAX_IN_FLIGHT": "2"}
    with django_db_blocker.unblock(), asgi_server(env=env) as base:
        split = urlsplit(base)
        server = split.hostname or "127.0.0.1", split.port or 80
        # when: four clients each declare a 100-byte body, send six bytes of it and wait
        stalled = []
        for _ in range(4):
            conn = socket.create_connection(server, timeout=30)
            conn.sendall(post("/v1/facts", b"Content-Length: 100\r\n") + b'{"type')
            stalled.append(conn)
        # then: a whole request meanwhile is answered by the app (its credential), not 503
        status, _, content = exchange(server, post("/v1/facts", b"Content-Length: 2\r\n"), b"{}")
        assert status == 401, content
        # and each stalled one is answered 408 in the error shape, naming the setting
        for conn in stalled:
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
            conn.close()
            top, _, content = answer.partition(b"\r\n\r\n")
            assert int(top.split()[1]) == 408, answer
            error = json.loads(content)
            assert error["code"] == "validation-error"
            assert error["details"] == {"seconds": 2, "setting": "KINDMEM_BODY_TIMEOUT_SECONDS"}
