"""Past one server: the migrated schema is what Citus needs (deploy/citus.md).

On Citus every tenant-owned table is distributed by `tenant_id` and co-located with the others,
so a shard holds whole tenants, and a constraint is checked inside one shard only. Hence:

- every primary key, unique constraint and unique index of a distributed table includes
  `tenant_id` (Citus refuses one that does not);
- every foreign key that points at a distributed table joins on `tenant_id` on both sides
  (`(tenant_id, x) -> (tenant_id, id)`), from another distributed table; a foreign key from a
  distributed table to a reference table may be anything;
- every other table is a reference table, named in REFERENCE_TABLES (copied whole to every
  node; it may point at reference tables only).

The catalog is read, not the models, so raw SQL and Django's own tables count; a new table,
key or foreign key that breaks a rule fails here.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

from kindmem.distribution_sql import REFERENCE_TABLES, tenant_models, tenant_relations

pytestmark = pytest.mark.django_db


def public_tables() -> dict[str, bool]:
    """Every ordinary or partitioned table of the schema -> whether it has a tenant_id column."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid"
            "  AND a.attname = 'tenant_id' AND NOT a.attisdropped)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
        )
        return dict(cursor.fetchall())


def distributed_tables() -> set[str]:
    """The tenant-owned tables: a tenant_id column, and not kept global."""
    return {t for t, has_tenant in public_tables().items() if has_tenant} - REFERENCE_TABLES


def undistributable_findings() -> set[str]:
    """Tables that are neither (no tenant_id, not a reference table), and every primary key,
    unique constraint, unique index or exclusion constraint of a distributed table whose key
    columns leave tenant_id out."""
    tables = public_tables()
    found = {f"{t}.tenant_id" for t, has in tables.items() if not has} - {
        f"{t}.tenant_id" for t in REFERENCE_TABLES
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.relname, i.relname, x.indisprimary,"
            " EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid"
            "  AND a.attname = 'tenant_id'"
            "  AND a.attnum = ANY ((x.indkey::int2[])[0:x.indnkeyatts - 1]))"
            " FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE t.relname = ANY (%s) AND (x.indisunique OR EXISTS (SELECT 1 FROM"
            "  pg_constraint k WHERE k.conindid = x.indexrelid AND k.contype = 'x'))",
            [sorted(distributed_tables())],
        )
        found |= {
            f"{table}.pkey" if primary else f"{table}.{index}"
            for table, index, primary, has_tenant in cursor.fetchall()
            if not has_tenant
        }
    return found


def foreign_key_findings() -> set[str]:
    """Foreign keys that point at a distributed table without joining on tenant_id on both
    sides, or from a table that will not be distributed."""
    distributed = distributed_tables()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT src.relname, dst.relname,"
            " (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(f.conkey)"
            "  WITH ORDINALITY AS k(attnum, n) JOIN pg_attribute a"
            "  ON a.attrelid = f.conrelid AND a.attnum = k.attnum),"
            " EXISTS (SELECT 1 FROM unnest(f.conkey, f.confkey) AS p(src_attnum, dst_attnum)"
            "  JOIN pg_attribute s ON s.attrelid = f.conrelid AND s.attnum = p.src_attnum"
            "  JOIN pg_attribute d ON d.attrelid = f.confrelid AND d.attnum = p.dst_attnum"
            "  WHERE s.attname = 'tenant_id' AND d.attname = 'tenant_id')"
            " FROM pg_constraint f JOIN pg_class src ON src.oid = f.conrelid"
            " JOIN pg_class dst ON dst.oid = f.confrelid"
            " WHERE f.contype = 'f' AND dst.relname = ANY (%s)",
            [sorted(distributed)],
        )
        return {
            f"{table}.{columns}"
            for table, _target, columns, on_tenant in cursor.fetchall()
            if not (on_tenant and table in distributed)
        }


def test_every_table_is_tenant_owned_or_a_named_reference_table():
    # given: the tables of the migrated schema, and the models that say they have a tenant
    tables = public_tables()
    tenant_models = {
        model._meta.db_table
        for model in apps.get_models(include_auto_created=True)
        if any(field.column == "tenant_id" for field in model._meta.concrete_fields)
    }

    # when: each is sorted into distributed (a tenant_id) or reference (named above)
    with_tenant = {table for table, has_tenant in tables.items() if has_tenant}

    # then: the catalog and the models agree on who has a tenant, every reference table named
    # still exists, and kindmem_user is the one table with a tenant kept global (a table
    # that is neither fails the unique-key test below)
    assert with_tenant == tenant_models
    assert REFERENCE_TABLES - set(tables) == set()
    assert REFERENCE_TABLES & with_tenant == {"kindmem_user"}


def test_every_distributed_tenant_id_is_a_non_null_uuid_so_the_tables_can_be_co_located():
    # given: the tenant_id column of every table to distribute
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, data_type, is_nullable FROM information_schema.columns"
            " WHERE table_schema = 'public' AND column_name = 'tenant_id'"
            " AND table_name = ANY (%s)",
            [sorted(distributed_tables())],
        )
        columns = {table: (data_type, nullable) for table, data_type, nullable in cursor}

    # then: one type everywhere (co-location needs it) and never NULL (a row needs a shard)
    assert columns == dict.fromkeys(distributed_tables(), ("uuid", "NO"))


def test_every_unique_key_of_a_distributed_table_includes_tenant_id():
    # given: the tables with no tenant_id that are not reference tables, and the keys, unique
    # constraints and unique indexes of every table to distribute
    # when: those tables, and the keys whose columns leave tenant_id out, are found
    found = undistributable_findings()

    # then: there are none (a table with no tenant: REFERENCE_TABLES, if it is global)
    assert sorted(found) == []


def test_every_foreign_key_to_a_distributed_table_joins_on_tenant_id():
    # given: the foreign keys that point at a table to distribute
    # when: the ones that do not join on tenant_id (or come from a table kept global) are found
    found = foreign_key_findings()

    # then: there are none
    assert sorted(found) == []


def test_every_relation_between_tenant_models_joins_and_is_constrained_on_the_tenant():
    # given: every relation field of a tenant-owned model to another tenant-owned model, and
    # the composite foreign keys of the catalog
    owned = set(tenant_models(apps))
    relations = {
        (model._meta.db_table, field.column)
        for model in owned
        for field in model._meta.concrete_fields
        if field.is_relation and field.related_model in owned
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.conrelid::regclass::text, a.attname FROM pg_constraint c"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[2]"
            " JOIN pg_attribute t ON t.attrelid = c.conrelid AND t.attnum = c.conkey[1]"
            " WHERE c.contype = 'f' AND cardinality(c.conkey) = 2 AND t.attname = 'tenant_id'"
        )
        composite = set(cursor.fetchall())

    # then: each is a kindmem.tenant_keys field (its joins equate the tenants, so Citus routes
    # them to one shard) with its composite constraint `(tenant_id, x_id) -> (tenant_id, id)`
    tenant_keyed = {
        (model._meta.db_table, field.column) for model in owned for field in tenant_relations(model)
    }
    assert sorted(relations - tenant_keyed) == []
    assert sorted(relations - composite) == []
    assert len(relations) > 30
