"""How bench/load.py stands kindmem up and knows it is up: `kindmem run` started and stopped
(`kindmem_running`), the credentials it prints, the wait until web and MCP both answer, and the
pooled topology (PgBouncer and a streaming standby in front of the embedded PostgreSQL)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.load_level import ConnectionSampler

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Running:
    """A `kindmem run` that answers: where, the credentials it printed, the connection
    samplers of its database (and standby); once stopped, how it exited and how long it took."""

    base: str
    log_path: Path
    creds: dict[str, Any] = field(default_factory=dict)
    samplers: list[ConnectionSampler] = field(default_factory=list)
    exit_code: int | None = None
    stop_seconds: float | None = None

    def tracebacks(self) -> int:
        text = self.log_path.read_text(errors="replace")
        return text.count("Traceback (most recent call last)")


@contextmanager
def kindmem_running(
    data_dir: Path,
    *,
    embedder: str,
    topology: str = "one",
    pool_size: int = 8,
    env: Mapping[str, str] | None = None,
) -> Iterator[Running]:
    """`kindmem run` on `data_dir` (bench/load.py's docstring says how), with `env` over the
    environment it is started in, once web and MCP both answer; stopped with SIGINT on exit.
    Its stderr goes to <data-dir>/run.log, its stdout (gunicorn's access log) to access.log."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    child_env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}
    }
    child_env.update(
        KINDMEM_DATA_DIR=str(data_dir),
        KINDMEM_PORT=str(port),
        KINDMEM_EMBEDDER=embedder,
        KINDMEM_WRITE_RATE="1000000/min",
        PYTHONPATH=str(ROOT),
    )
    # the local model's ONNX file outlives --fresh (made once, tens of seconds)
    child_env.setdefault("KINDMEM_MODEL_CACHE_DIR", str(data_dir.parent / "models"))
    child_env.update(env or {})
    stack = ExitStack()
    database = None
    replica = None
    if topology == "pooled":
        database, replica, pooled_env = pooled(stack, data_dir, pool_size)
        child_env.update(pooled_env)
    running = Running(base=base, log_path=data_dir / "run.log")
    log = stack.enter_context(running.log_path.open("wb"))
    access = stack.enter_context((data_dir / "access.log").open("wb"))
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, "-m", "config.cli", "run"],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=ROOT,
    )
    assert run.stdout is not None
    stdout = run.stdout
    copier: threading.Thread | None = None
    try:
        creds = running.creds = read_credentials(stdout, time.monotonic() + 900)
        # the rest of stdout (gunicorn's access log) to a file, so the pipe never fills
        copier = threading.Thread(
            target=lambda: [access.write(chunk) for chunk in iter(lambda: stdout.read(4096), b"")],
            daemon=True,
        )
        copier.start()
        if not credentials_complete(creds):
            raise SystemExit(f"no credentials from `kindmem run` (see {running.log_path}): {creds}")
        wait_until_up(base, creds)
        print(f"kindmem run up in {time.monotonic() - started:.1f} s on {base}", flush=True)

        from config.embedded_db import ensure_embedded_database

        running.samplers.append(ConnectionSampler(database or ensure_embedded_database(data_dir)))
        if replica is not None:
            replica_params = {**replica.primary, "host": replica.socket_dir, "port": replica.port}
            running.samplers.append(ConnectionSampler(replica_params, label="replica:"))
        for each in running.samplers:
            each.start()
        yield running
    finally:
        for each in running.samplers:
            each.stop()
        stop_start = time.monotonic()
        run.send_signal(signal.SIGINT)
        try:
            running.exit_code = run.wait(timeout=120)
        except subprocess.TimeoutExpired:
            run.kill()
            running.exit_code = run.wait()
        if copier is not None:
            copier.join(timeout=10)  # the access log's last lines, before it is closed
        stack.close()  # the logs, PgBouncer and the standby
        running.stop_seconds = round(time.monotonic() - stop_start, 1)


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
