"""What tests that start real processes (a worker, a web server) share: the test database
for them, the embedded broker they read, the Redis they may use, and a live web server."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from config.embedded_db import process_database_env


def database_env() -> dict[str, str]:
    """The test database for a web or worker subprocess: it logs in as the app role."""
    return process_database_env(connection.get_connection_params(), settings.KINDMEM_APP_ROLE)


def redis_or_skip(url: str) -> None:
    """Skip, saying why, where no Redis answers at `url`. Since the suite starts an embedded
    Valkey where KINDMEM_TEST_REDIS_URL is unset (tests/conftest.py), this happens only when
    that variable names a server that is not there."""
    if not url:
        pytest.skip("KINDMEM_TEST_REDIS_URL is not set: no Redis to test against")
    try:
        with Connection(url) as probe:
            probe.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # any failure to connect means there is no Redis here
        pytest.skip(f"no Redis answers at {url}: {exc.__class__.__name__}")


@dataclass
class Broker:
    """An embedded broker (config/broker.py) of a test's own: its URL for a worker's
    CELERY_BROKER_URL, and a client connection to queue on."""

    url: str
    connection: Connection
    process: subprocess.Popen[bytes]


@contextmanager
def embedded_broker(data_dir: Path) -> Iterator[Broker]:
    """A Valkey under `data_dir` for the length of the block, as `kindmem run` starts it."""
    from config import broker

    url = broker.embedded_broker_url(data_dir)
    started = Broker(
        url=url, connection=Connection(url), process=broker.broker_start(data_dir=data_dir)
    )
    try:
        yield started
    finally:
        started.connection.release()
        started.process.send_signal(signal.SIGTERM)  # the one running now (a test may restart it)
        started.process.wait(timeout=30)


def _web_env() -> dict[str, str]:
    """A web process's broker is the test run's (tests/conftest.py): what a committed request
    queues (an erasure, an export) lands where the test process queues too, not in a broker
    that no one started."""
    return {"SECRET_KEY": "web-test", "CELERY_BROKER_URL": settings.CELERY_BROKER_URL}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(server: subprocess.Popen[bytes], port: int) -> None:
    """Wait until the server on `port` answers anything at /healthz."""
    deadline = time.monotonic() + 60
    while True:
        probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            probe.request("GET", "/healthz")
            probe.getresponse().read()  # any answer: the server is up
            return
        except (OSError, http.client.HTTPException):
            assert server.poll() is None, "the server did not start"
            assert time.monotonic() < deadline, "the server did not answer in 60 s"
            time.sleep(0.3)
        finally:
            probe.close()


@contextmanager
def asgi_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """kindmem's ASGI app (Django and the MCP server, config/asgi.py) under uvicorn, as
    `kindmem run` starts it, on the test database and a free port: yields its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env={**os.environ, **database_env(), **_web_env(), **(env or {})},
        cwd=settings.BASE_DIR,
    )
    try:
        wait_until_serving(server, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


@contextmanager
def web_server(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """kindmem's web process as production starts it (gunicorn with config/gunicorn_conf.py),
    on the test database and a free port, until the block ends: yields its base URL. Call it
    where the test database may be reached (a django_db test, or django_db_blocker.unblock()).
    """
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "python:config.gunicorn_conf",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--log-level",
            "warning",
            *args,
        ],
        env={**os.environ, **database_env(), **_web_env(), **(env or {})},
        cwd=settings.BASE_DIR,
    )
    try:
        wait_until_serving(server, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
