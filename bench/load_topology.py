"""How bench/load.py stands kindmem up and knows it is up: the credentials `kindmem run`
prints, the wait until web and MCP both answer, and the pooled topology (PgBouncer and a
streaming standby in front of the embedded PostgreSQL)."""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_credentials(out: Any, deadline: float) -> dict[str, Any]:
    """What `kindmem run` prints (config/management/commands/seed_demo.py format_credentials),
    up to its "MCP server:" line: the project, the console passwords, the API keys."""
    creds: dict[str, Any] = {"passwords": {}, "keys": {}}
    section = ""
    for raw in out:
        line = raw.decode(errors="replace")
        sys.stdout.write("  | " + line) if "kindmem" in line else None
        if m := re.match(r"\s+project:\s+.*\(([0-9a-f-]{36})\)", line):
            creds["project"] = m.group(1)
        elif "console logins" in line:
            section = "passwords"
        elif "API keys" in line:
            section = "keys"
        elif section and (m := re.match(r" {4}(\w+)\s+(\S+)\s*$", line)):
            creds[section][m.group(1)] = m.group(2)
        elif m := re.match(r"MCP server:\s+(http://\S+/mcp)", line):
            creds["mcp"] = m.group(1)
            return creds
        if time.monotonic() > deadline:
            return creds
    return creds


def credentials_complete(creds: dict[str, Any]) -> bool:
    return (
        "project" in creds
        and "mcp" in creds
        and {"admin", "app"} <= creds["keys"].keys()
        and "admin" in creds["passwords"]
    )


def pooled(
    stack: ExitStack, data_dir: Path, pool_size: int
) -> tuple[dict[str, Any], Any, dict[str, str]]:
    """The embedded PostgreSQL started here, a streaming standby of it and PgBouncer in front
    of it (the fixtures the suite's own tests use: tests/processes.py), and the environment
    under which `kindmem run`'s processes reach the database through PgBouncer, read from the
    standby and migrate directly."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("KINDMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    import django

    django.setup()
    from django.conf import settings

    from config.embedded_db import ensure_embedded_database
    from tests.processes import pgbouncer, standby

    database = ensure_embedded_database(data_dir)
    bouncer = stack.enter_context(pgbouncer(pool_size=pool_size, params=database))
    replica = stack.enter_context(standby(database))
    env = {
        **bouncer.env,
        "KINDMEM_DATABASE_LOGIN": "migration",  # `run` migrates; its children log in as app
        "KINDMEM_REPLICA_URL": replica.url(settings.KINDMEM_APP_ROLE),
        "SECRET_KEY": "bench-load-pooled",
        # plain HTTP on loopback, as the one-machine default serves the console
        "SESSION_COOKIE_SECURE": "false",
    }
    return database, replica, env


def wait_until_up(base: str, creds: dict[str, Any]) -> None:
    """Until the web answers /healthz 200 and the MCP server answers a tools/list."""
    deadline = time.monotonic() + 300
    with httpx.Client(timeout=10) as http:
        while time.monotonic() < deadline:
            try:
                web = http.get(base + "/healthz").status_code
                mcp = http.post(
                    creds["mcp"],
                    headers={
                        "Authorization": f"Bearer {creds['keys']['app']}",
                        "Accept": "application/json, text/event-stream",
                    },
                    json={"jsonrpc": "2.0", "id": 0, "method": "tools/list"},
                ).status_code
                if web == 200 and mcp == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    raise SystemExit("kindmem run did not answer on both ports within 300 s")
