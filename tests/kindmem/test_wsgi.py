"""The web process as gunicorn loads it: config.asgi (its asgi workers) in a process of its own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings

from tests.processes import database_env, web_server

PROBE = (
    "import gc, config.asgi;"
    " from django.db import connection;"
    " cursor = connection.cursor(); cursor.execute('SELECT current_user');"
    " print(cursor.fetchone()[0], gc.get_freeze_count())"
)


def load_wsgi(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **database_env(), "SECRET_KEY": "wsgi-test", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
def test_the_web_process_logs_in_as_the_app_role_with_its_startup_heap_frozen() -> None:
    loaded = load_wsgi()
    assert loaded.returncode == 0, loaded.stderr
    role, frozen = loaded.stdout.split()
    # the role row security confines, and what it loaded kept out of the collector's passes
    assert role == settings.KINDMEM_APP_ROLE
    assert int(frozen) > 10_000


@pytest.mark.django_db(transaction=True)
def test_the_web_process_refuses_to_serve_as_the_tables_owner() -> None:
    owner = database_env()["DATABASE_MIGRATION_URL"]
    refused = load_wsgi(DATABASE_URL=owner)
    assert refused.returncode != 0
    assert "refuses to serve" in refused.stderr
    assert "superuser or may bypass row security" in refused.stderr


# ---- hole 18: what gunicorn refuses itself is in the error shape too ------------------------


# One server for these tests. They do not touch the database themselves; the mark makes
# pytest-django create the test database that the server's workers open.
hole_18 = pytest.mark.django_db


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker) -> Iterator[tuple[str, int]]:
    with django_db_blocker.unblock(), web_server() as base:
        host, port = base.removeprefix("http://").split(":")
        yield host, int(port)


def raw_exchange(server: tuple[str, int], request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as is (http.client would refuse to send most of these) and read the
    answer to the end: its status, headers (lower-cased) and body."""
    with socket.create_connection(server, timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), {k.lower(): v for k, v in headers.items()}, body


@hole_18
@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        # a request line over gunicorn's limit (4094 bytes)
        (
            b"GET /v1/facts?type=" + b"x" * 5000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n",
            414,
            "uri-too-long",
        ),
        # a header field over its limit (8190 bytes), and more fields than it takes (100)
        (
            b"GET /v1/me HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"x" * 9000 + b"\r\n\r\n",
            431,
            "headers-too-large",
        ),
        (
            b"GET /v1/me HTTP/1.1\r\nHost: localhost\r\n"
            + b"".join(b"X-H%d: 1\r\n" % i for i in range(150))
            + b"\r\n",
            431,
            "headers-too-large",
        ),
        # malformed: a NUL in a header, a request line that is not one
        (
            b"GET /v1/me HTTP/1.1\r\nHost: localhost\r\nAuthorization: a\x00b\r\n\r\n",
            400,
            "validation-error",
        ),
        (b"NOT A REQUEST\r\n\r\n", 400, "validation-error"),
    ],
    ids=["request-line", "header-field", "header-count", "nul-in-header", "not-a-request"],
)
def test_hole_18_what_gunicorn_refuses_itself_is_json_in_the_error_shape(
    web, request_bytes, status, code
):
    # when: a request gunicorn refuses before kindmem sees it
    got_status, headers, body = raw_exchange(web, request_bytes)
    # then: its status, in the one JSON error shape
    assert got_status == status, body
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code
    assert error["message"]


@hole_18
def test_hole_18_a_request_within_gunicorns_limits_reaches_kindmem(web):
    got_status, _, body = raw_exchange(
        web, b"GET /v1/me HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    assert got_status == 401
    assert json.loads(body)["code"] == "unauthenticated"
