"""What tests that start real processes (a worker, a web server) share: the test database's
URL for them, and the Redis they may use."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.db import connection
from kombu import Connection


def database_url() -> str:
    """DATABASE_URL of the test database (the embedded server's socket) for a subprocess."""
    params = connection.get_connection_params()
    host = quote(str(params.get("host", "")), safe="")
    return f"postgresql://{params['user']}@{host}:{params.get('port') or 5432}/{params['dbname']}"


def redis_or_skip(url: str) -> None:
    """Skip, saying why, where no Redis answers at `url` (CI sets and starts one)."""
    if not url:
        pytest.skip("KINDMEM_TEST_REDIS_URL is not set: no Redis to test against")
    try:
        with Connection(url) as probe:
            probe.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # any failure to connect means there is no Redis here
        pytest.skip(f"no Redis answers at {url}: {exc.__class__.__name__}")
