"""What tests that start real processes (a worker, a web server) share: the test database
for them, the embedded broker they read, and the Redis they may use."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from kindmem.embedded_db import process_database_env


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
    """An embedded broker (kindmem/broker.py) of a test's own: its URL for a worker's
    CELERY_BROKER_URL, and a client connection to queue on."""

    url: str
    connection: Connection
    process: subprocess.Popen[bytes]


@contextmanager
def embedded_broker(data_dir: Path) -> Iterator[Broker]:
    """A Valkey under `data_dir` for the length of the block, as `kindmem run` starts it."""
    from kindmem import broker

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
