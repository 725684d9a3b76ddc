"""The keys and the distribution of the tenant-owned tables, for migrations (deploy/citus.md).

Every tenant-owned table's primary key and unique keys lead with (or include) `tenant_id`, and
every relation between two of them is the composite `(tenant_id, x_id) -> (tenant_id, id)`:
what Citus needs to keep a tenant's rows on one shard, and, on one PostgreSQL, a second proof
that a row never points into another tenant. Django's model state keeps `id` as the primary
key (an id is unique on its own, and a ForeignKey cannot point at a CompositePrimaryKey): only
the database's key is composite. `tests/test_distribution.py` reads the catalog to hold every
table to this.

`distribute` runs only against a Citus coordinator (the `citus` extension is installed): it
makes every global table a reference table and every tenant-owned table a distributed table by
`tenant_id`, all co-located.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.apps.registry import Apps
from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from psycopg import sql

from kindmem.row_security_sql import TENANT_ROWS_PLAIN
from kindmem.tenant_keys import TenantForeignKey, TenantOneToOneField

# Global tables, copied whole to every node. kindmem_user has a tenant_id but stays global:
# platform staff have none (a distribution column is never NULL), and a console sign-in finds
# a user by username before any tenant is known. The many-to-many tables of users and app keys
# are global too (small, written when staff edit a membership): a reference table may not point
# at a distributed one, so their columns to orgs, projects and keys have no constraint.
REFERENCE_TABLES: frozenset[str] = frozenset(
    {
        "kindmem_tenant",
        "kindmem_user",
        "kindmem_user_groups",
        "kindmem_user_user_permissions",
        "kindmem_user_orgs",
        "kindmem_user_projects",
        "kindmem_apikey_projects",
        "kindmem_workerheartbeat",
        "kindmem_cache",  # the database cache (the throttle's counters, when there is no Redis)
        "auth_group",
        "auth_group_permissions",
        "auth_permission",
        "django_admin_log",
        "django_content_type",
        "django_migrations",
        "django_session",
    }
)


def tenant_models(apps: Apps) -> list[type[models.Model]]:
    """The models of the tenant-owned tables: a `tenant` and not global."""
    return [
        model
        for model in apps.get_models()
        if any(field.name == "tenant" for field in model._meta.concrete_fields)
        and model._meta.db_table not in REFERENCE_TABLES
    ]


def tenant_relations(model: type[models.Model]) -> list[Any]:
    """The model's relations to another tenant-owned model (kindmem.tenant_keys)."""
    return [
        field
        for field in model._meta.concrete_fields
        if isinstance(field, TenantForeignKey | TenantOneToOneField)
    ]


def _constraint_name(table: str, column: str) -> str:
    name = f"{table}_{column}_tenant_fk"
    assert len(name) <= 63, name  # PostgreSQL's identifier limit: pick a shorter name
    return name


def composite_foreign_key(field: Any) -> sql.Composed:
    table = field.model._meta.db_table
    target = field.remote_field.model._meta
    return sql.SQL(
        "ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (tenant_id, {column})"
        " REFERENCES {target} (tenant_id, {target_column}) DEFERRABLE INITIALLY DEFERRED"
    ).format(
        table=sql.Identifier(table),
        name=sql.Identifier(_constraint_name(table, field.column)),
        column=sql.Identifier(field.column),
        target=sql.Identifier(target.db_table),
        target_column=sql.Identifier(str(target.pk.column)),
    )


def composite_primary_key(cursor: Any, model: type[models.Model]) -> None:
    """Make the table's primary key `(tenant_id, <pk>)`, unless it already leads with it."""
    table = model._meta.db_table
    pk_column = str(model._meta.pk.column)
    if pk_column == "tenant_id":
        return
    cursor.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
        [table],
    )
    (name,) = cursor.fetchone()
    cursor.execute(
        sql.SQL("ALTER TABLE {table} DROP CONSTRAINT {name}, ADD PRIMARY KEY (tenant_id, {pk})")
        .format(
            table=sql.Identifier(table), name=sql.Identifier(name), pk=sql.Identifier(pk_column)
        )
        .as_string(cursor.connection)
    )


def drop_column_unique(cursor: Any, field: Any) -> None:
    """Drop the unique constraint on a one-to-one field's column alone (the model's
    UniqueConstraint on `(tenant, x)` stays)."""
    table = field.model._meta.db_table
    cursor.execute(
        "SELECT c.conname FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid"
        " AND a.attnum = c.conkey[1] WHERE c.conrelid = %s::regclass AND c.contype = 'u'"
        " AND cardinality(c.conkey) = 1 AND a.attname = %s",
        [table, field.column],
    )
    for (name,) in cursor.fetchall():
        cursor.execute(
            sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}")
            .format(sql.Identifier(table), sql.Identifier(name))
            .as_string(cursor.connection)
        )


def composite_tenant_keys(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Every tenant-owned table's primary key becomes `(tenant_id, id)`, and its one-to-one
    columns lose their single-column unique constraints; then every relation between two of
    them gets its composite foreign key (which needs that key)."""
    owned = tenant_models(apps)
    with schema_editor.connection.cursor() as cursor:
        for model in owned:
            composite_primary_key(cursor, model)
            for field in tenant_relations(model):
                if isinstance(field, TenantOneToOneField):
                    drop_column_unique(cursor, field)
        for model in owned:
            for field in tenant_relations(model):
                cursor.execute(composite_foreign_key(field).as_string(cursor.connection))


def citus_installed(schema_editor: BaseDatabaseSchemaEditor) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")
        return bool(cursor.fetchone()[0])


def _foreign_keys(cursor: Any, tables: Iterable[str]) -> list[tuple[str, str, str]]:
    """(table, constraint, definition) of every foreign key from one of `tables`."""
    cursor.execute(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)"
        " FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY (%s)",
        [sorted(tables)],
    )
    return list(cursor.fetchall())


def distribute(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """On a Citus coordinator: the global tables become reference tables and the tenant-owned
    ones distributed by tenant_id, co-located; on plain PostgreSQL, nothing.

    Citus checks foreign keys when it converts a table, so they are dropped first and put back
    once every table is converted; and it refuses a row-security policy with a subquery on a
    distributed table, so the policy is written without one (TENANT_ROWS_PLAIN)."""
    if not citus_installed(schema_editor):
        return
    owned = sorted(model._meta.db_table for model in tenant_models(apps))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY (%s)",
            [sorted(REFERENCE_TABLES)],
        )
        reference = sorted(row[0] for row in cursor.fetchall())
        foreign_keys = _foreign_keys(cursor, [*reference, *owned])
        for table, name, _definition in foreign_keys:
            cursor.execute(
                sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}")
                .format(sql.Identifier(table), sql.Identifier(name))
                .as_string(cursor.connection)
            )
        for table in reference:
            cursor.execute("SELECT create_reference_table(%s)", [table])
        for table in owned:
            cursor.execute(
                sql.SQL(
                    "ALTER POLICY tenant_isolation ON {table} USING ({rows}) WITH CHECK ({rows})"
                )
                .format(table=sql.Identifier(table), rows=sql.SQL(TENANT_ROWS_PLAIN))
                .as_string(cursor.connection)
            )
            cursor.execute(
                "SELECT create_distributed_table(%s, 'tenant_id', colocate_with => %s)",
                [table, owned[0] if table != owned[0] else "default"],
            )
        for table, name, definition in foreign_keys:
            cursor.execute(
                sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} {}")
                .format(sql.Identifier(table), sql.Identifier(name), sql.SQL(definition))
                .as_string(cursor.connection)
            )
