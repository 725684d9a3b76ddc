"""kindmem on a live Citus cluster (the Citus run: KINDMEM_TEST_CITUS=1, tests/conftest.py): the
session's coordinator and two workers are up, Django is connected to the coordinator, and
`migrate` left every tenant-owned table distributed by `tenant_id` in one co-location group,
every global table (tests/test_distribution.py's REFERENCE_TABLES) a reference table, none
local to the coordinator; a tenant-scoped query runs on one shard (tests/citus/explain.py)."""

from __future__ import annotations

import uuid
from typing import NamedTuple

import pytest
from django.conf import settings
from django.db import connection

from kindmem.row_security import tenant_context
from tests.citus.explain import assert_single_shard
from tests.citus_cluster import Cluster
from tests.test_distribution import REFERENCE_TABLES, distributed_tables, public_tables


class CitusTable(NamedTuple):
    """A table's row of pg_dist_partition: 'h' (hash-distributed) by `column`, or 'n' (none)
    with `replication` 't' (a reference table) or 's' (a Citus local table)."""

    method: str
    column: str | None
    colocation: int
    replication: str

    @property
    def by_tenant(self) -> bool:
        return (self.method, self.column) == ("h", "tenant_id")

    @property
    def reference(self) -> bool:
        return (self.method, self.replication) == ("n", "t")


def citus_tables() -> dict[str, CitusTable]:
    """The public tables in Citus's metadata, by name."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, p.partmethod, column_to_column_name(p.logicalrelid, p.partkey),"
            " p.colocationid, p.repmodel"
            " FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
        )
        return {name: CitusTable(*row) for name, *row in cursor.fetchall()}


@pytest.mark.django_db
def test_django_is_on_the_coordinator_of_a_cluster_of_two_workers(citus: Cluster) -> None:
    # given: the session's cluster, and Django's connection
    with connection.cursor() as cursor:
        # when: the server says where it listens, what it has, and which workers it sees
        cursor.execute("SELECT inet_server_port()")
        [(port,)] = cursor.fetchall()
        cursor.execute("SELECT extname FROM pg_extension WHERE extname IN ('citus', 'vector')")
        extensions = {name for (name,) in cursor.fetchall()}
        cursor.execute("SELECT node_port FROM citus_get_active_worker_nodes()")
        workers = sorted(port for (port,) in cursor.fetchall())

    # then: it is the coordinator, with Citus and pgvector, and both workers are active
    assert port == citus.port
    assert extensions == {"citus", "vector"}
    assert workers == citus.worker_ports


def test_the_app_role_exists_on_every_node(citus: Cluster) -> None:
    # given: the app role, created once on the coordinator by the session
    role = str(settings.KINDMEM_APP_ROLE)

    # when: each node is asked for it
    found = {
        port: citus.query(
            f"SELECT rolcanlogin, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = '{role}'",
            port=port,
        )
        for port in [citus.port, *citus.worker_ports]
    }

    # then: every node has it, a login that is no superuser and cannot bypass row security
    assert found == {port: [(True, False, False)] for port in found}


@pytest.mark.django_db
def test_every_tenant_owned_table_is_distributed_by_tenant_id_in_one_colocation_group() -> None:
    # given: the tables that have a tenant_id but are not kept global, and Citus's metadata
    # after the session's `migrate`
    tenant_owned = distributed_tables()
    catalog = citus_tables()
    assert len(tenant_owned) >= 20, sorted(tenant_owned)

    # then: each is hash-distributed by tenant_id (None: left local to the coordinator)...
    wrong = {
        t: catalog.get(t)
        for t in sorted(tenant_owned)
        if t not in catalog or not catalog[t].by_tenant
    }
    assert wrong == {}, "not distributed by tenant_id"
    # ...and all of them are co-located: one tenant's rows of every table on one node
    groups = {catalog[table].colocation for table in tenant_owned}
    assert len(groups) == 1, {t: catalog[t].colocation for t in sorted(tenant_owned)}


@pytest.mark.django_db
def test_every_global_table_is_a_reference_table() -> None:
    # given: the global tables of tests/test_distribution.py that the schema has
    present = REFERENCE_TABLES & set(public_tables())
    catalog = citus_tables()

    # then: each is a reference table, a copy on every node (None: left local)
    wrong = {
        t: catalog.get(t) for t in sorted(present) if t not in catalog or not catalog[t].reference
    }
    assert wrong == {}, "not a reference table"


@pytest.mark.django_db
def test_no_table_stays_local_to_the_coordinator() -> None:
    # given: every table of the schema, and those Citus distributes or replicates
    catalog = citus_tables()
    placed = {table for table, row in catalog.items() if row.by_tenant or row.reference}

    # then: none is left out (e.g. a join table that has no tenant_id yet)
    assert sorted(set(public_tables()) - placed) == []


@pytest.mark.django_db
def test_a_tenant_scoped_facts_query_runs_on_one_shard() -> None:
    # given: a tenant
    tenant = uuid.uuid4()
    query = "SELECT id, type FROM facts_fact WHERE tenant_id = %s ORDER BY created_at LIMIT 10"

    # then: its query is routed to one shard, as the tables' owner and under the app role's wall
    assert_single_shard(query, [tenant])
    with tenant_context(tenant):
        assert_single_shard(query, [tenant])


def test_assert_single_shard_fails_on_every_plan_but_a_routed_one(db: None) -> None:
    distributed = "facts_fact"
    tenant = uuid.uuid4()

    # a query on one tenant's rows is routed to its shard
    plan = assert_single_shard(f"SELECT id FROM {distributed} WHERE tenant_id = %s", [tenant])
    assert "Task Count: 1" in plan
    # one that reads every tenant's fans out to every shard
    with pytest.raises(AssertionError, match="multi-shard"):
        assert_single_shard(f"SELECT count(*) FROM {distributed}")
    # one whose tenant is known only after a first query runs a subplan first
    with pytest.raises(AssertionError, match="subplans"):
        assert_single_shard(
            f"WITH t AS MATERIALIZED (SELECT tenant_id FROM {distributed} LIMIT 1)"
            f" SELECT id FROM {distributed} WHERE tenant_id = (SELECT tenant_id FROM t)"
        )
    # and one on a table of the coordinator's own (the catalog) never reaches Citus's planner
    with pytest.raises(AssertionError, match="not a distributed plan"):
        assert_single_shard("SELECT relname FROM pg_class WHERE relname = %s", ["facts_fact"])
