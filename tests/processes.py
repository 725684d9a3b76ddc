"""What tests that start real processes (a worker, a web server) share: the test database
for them, and the Redis they may use."""

from __future__ import annotations

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
    """Skip, saying why, where no Redis answers at `url` (CI sets and starts one)."""
    if not url:
        pytest.skip("KINDMEM_TEST_REDIS_URL is not set: no Redis to test against")
    try:
        with Connection(url) as probe:
            probe.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # any failure to connect means there is no Redis here
        pytest.skip(f"no Redis answers at {url}: {exc.__class__.__name__}")


def filesystem_broker(data_dir: Path) -> Connection:
    """A client of the filesystem broker that a worker with KINDMEM_DATA_DIR=`data_dir` reads
    (its folders made here, before the worker starts)."""
    folder = data_dir / "broker" / "queue"
    folder.mkdir(parents=True)
    (data_dir / "broker" / "processed").mkdir()
    return Connection(
        "filesystem://",
        transport_options={"data_folder_in": str(folder), "data_folder_out": str(folder)},
    )
