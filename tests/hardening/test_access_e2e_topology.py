"""The generated access e2e (tests/hardening/test_access_e2e.py) through the pooled topology:
every request of the test reaches the database through a real PgBouncer in transaction pooling
mode (two server connections, no prepared statements, no startup options, row security's
settings local to each request's transaction), and every lag-tolerant read (list, get, search,
export, recall) runs on a streaming replica made with the embedded server's `pg_basebackup`.
The whole matrix of credentials, record states and read routes must answer what the references
allow there too: the guard and the wall hold on the replica and behind the pooler, not only on
a direct connection.

Before each replica read the test waits until the replica has replayed everything the primary
has written (the read-your-writes pin is off, so no read is moved back to the primary): the
question asked here is whether a replica read is confined, not how stale it may be
(tests/kindmem/test_replica.py holds the pin and the fallback)."""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import DEFAULT_DB_ALIAS, connections
from rest_framework.test import APIClient

import kindmem.replica
from kindmem.replica import REPLICA
from tests.conftest import World
from tests.extraction.chat_server import ChatServer
from tests.hardening.access_e2e.model import Cred
from tests.hardening.test_access_e2e import (
    E2E,
    SEEDS,
    scripted_llm,
    settings_for_the_world,
    world_built_read_and_compared,
)
from tests.processes import Standby, pgbouncer, standby

pytestmark = [
    pytest.mark.topology,
    pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, REPLICA]),
]

__all__ = ["scripted_llm"]  # the fixture, used by name

# The routes whose handler reads on the replica (AuditedView.replica_methods), by URL name.
REPLICA_ROUTES = {
    ("GET", "facts"),
    ("GET", "fact"),
    ("GET", "facts-export"),
    ("POST", "facts-search"),
    ("POST", "recall"),
}


@dataclass
class Topology:
    """The test's two ways to the database besides Django's: a direct session on the primary
    (its WAL position) and on the replica (how far it has replayed), and how many statements
    Django ran on the replica."""

    primary: psycopg.Connection[Any]
    replica_session: psycopg.Connection[Any]
    statements_on_replica: int = 0

    def replica_caught_up(self) -> None:
        [(written,)] = self.primary.execute("SELECT pg_current_wal_lsn()").fetchall()
        deadline = time.monotonic() + 30
        while True:
            [(behind,)] = self.replica_session.execute(
                "SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn()) > 0", [written]
            ).fetchall()
            if not behind:
                return
            assert time.monotonic() < deadline, "the replica did not replay the primary in 30 s"
            time.sleep(0.005)


def _pooled_options(options: dict[str, Any]) -> dict[str, Any]:
    """The logins' options as KINDMEM_TRANSACTION_POOLING configures them
    (config/settings_database.py): no startup options, no pool, no prepared statements."""
    pooled = {k: v for k, v in options.items() if k not in {"options", "pool"}}
    pooled["prepare_threshold"] = None
    return pooled


@pytest.fixture(scope="module")
def replica_alias(django_db_setup: None, django_db_blocker: Any) -> Iterator[Standby]:
    """A standby of the test database, as the `replica` alias the router reads on, for the
    module. It is configured before any test's database access begins (Django's test case
    connects only the aliases its `databases` name, and those must exist by then); as a mirror
    of the default, Django never flushes it (it is read-only: the primary's flush reaches it)."""
    with django_db_blocker.unblock(), standby() as replica:
        default = copy.deepcopy(connections[DEFAULT_DB_ALIAS].settings_dict)
        django_settings.DATABASES[REPLICA] = {
            **default,
            "HOST": replica.socket_dir,
            "PORT": replica.port,
            "OPTIONS": _pooled_options(default["OPTIONS"]),
            "TEST": {**default["TEST"], "MIRROR": DEFAULT_DB_ALIAS},
        }
        try:
            yield replica
        finally:
            connections[REPLICA].close()
            del connections[REPLICA]
            django_settings.DATABASES.pop(REPLICA)


@pytest.fixture
def pooled_topology(
    settings: Any, monkeypatch: pytest.MonkeyPatch, replica_alias: Standby
) -> Iterator[Topology]:
    """Django's default connection moved to a PgBouncer in front of the test database for the
    test, and put back before the database is flushed; the replica's statements counted."""
    default = connections[DEFAULT_DB_ALIAS]
    params = default.get_connection_params()
    saved = copy.deepcopy(default.settings_dict)
    with (
        pgbouncer(pool_size=2) as bouncer,
        closing(psycopg.connect(**_libpq(params), autocommit=True)) as primary,
        closing(
            psycopg.connect(
                host=replica_alias.socket_dir,
                port=replica_alias.port,
                dbname=str(params["dbname"]),
                user=str(params["user"]),
                autocommit=True,
            )
        ) as replica_session,
    ):
        settings.TRANSACTION_POOLING = True
        settings.REPLICA_PIN_SECONDS = 0  # every lag-tolerant read on the replica
        settings.REPLICA_RETRY_SECONDS = 3600  # a replica out of reach would fail the count
        monkeypatch.setattr(kindmem.replica, "_skip_until", 0.0)  # an earlier test's fallback
        default.close()
        default.settings_dict.update(
            {
                "HOST": "127.0.0.1",
                "PORT": bouncer.port,
                "OPTIONS": _pooled_options(saved["OPTIONS"]),
            }
        )
        topology = Topology(primary=primary, replica_session=replica_session)

        def counted(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
            if "set_config" not in sql:  # entering and leaving the tenant is not the read
                topology.statements_on_replica += 1
            return execute(sql, *args)

        try:
            with connections[REPLICA].execute_wrapper(counted):
                yield topology
        finally:
            default.close()
            default.settings_dict.clear()
            default.settings_dict.update(saved)


def _libpq(params: dict[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in ("host", "port", "dbname", "user") if params.get(k)}


class PooledE2E(E2E):
    """The e2e whose replica reads wait for the replica to replay the primary, and are checked
    to have run there."""

    def __init__(self, api: APIClient, seed: int, topology: Topology) -> None:
        super().__init__(api, seed)
        self.topology = topology
        self.read_on_replica: Counter[tuple[str, str]] = Counter()  # 200s, by route

    def call(self, cred: Cred, method: str, name: str, path: str, body: Any = None) -> Any:
        if (method, name) not in REPLICA_ROUTES:
            return super().call(cred, method, name, path, body)
        self.topology.replica_caught_up()
        before = self.topology.statements_on_replica
        response = super().call(cred, method, name, path, body)
        if response.status_code == 200:
            ran_there = self.topology.statements_on_replica > before
            self.check(
                "read on the replica",
                ran_there,
                lambda: f"{cred.name} {method} {path} answered 200 without reading on the replica",
            )
            self.read_on_replica[method, name] += int(ran_there)
        return response


@pytest.mark.parametrize("seed", SEEDS)
def test_every_credential_reads_exactly_what_the_reference_allows_through_pgbouncer_and_replica(
    api: APIClient,
    world: World,
    other_world: World,
    settings: Any,
    seed: int,
    record_property: Any,
    scripted_llm: ChatServer,
    pooled_topology: Topology,
) -> None:
    settings_for_the_world(settings)
    e2e = PooledE2E(api, seed, pooled_topology)
    e2e.chat = scripted_llm
    world_built_read_and_compared(e2e, world, other_world, record_property)
    # and every lag-tolerant route answered from the replica (each 200 ran there: `call`)
    print(f"  reads answered on the replica: {dict(e2e.read_on_replica)}")
    assert set(e2e.read_on_replica) == REPLICA_ROUTES, e2e.read_on_replica
