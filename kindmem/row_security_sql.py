"""The SQL of the row-level security wall, for migrations (kindmem/row_security.py uses it)."""

from __future__ import annotations

from psycopg import sql

# The tenant a connection is confined to; unset or "" matches no row (NULL never equals).
# `app.all_tenants` is the platform console's (staff with no tenant): never the API's. Each
# setting is read in a scalar subquery, an InitPlan evaluated once per query: as a plain
# expression it was read and cast again for every row (a 200k-row scan took 4x as long).
TENANT_ROWS = (
    "tenant_id = (SELECT NULLIF(current_setting('app.tenant_id', true), '')::uuid)"
    " OR (SELECT current_setting('app.all_tenants', true) = 'on')"
)
# The same rows without the subqueries, which Citus refuses in a distributed table's policy
# (kindmem.distribution_sql.distribute): there each shard's query reads the settings itself.
TENANT_ROWS_PLAIN = (
    "tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid"
    " OR current_setting('app.all_tenants', true) = 'on'"
)


def tenant_isolation(table: str) -> sql.Composed:
    """FORCE row security on `table` with the one policy: rows of the connection's tenant."""
    return sql.SQL(
        "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;"
        " ALTER TABLE {table} FORCE ROW LEVEL SECURITY;"
        " DROP POLICY IF EXISTS tenant_isolation ON {table};"
        " CREATE POLICY tenant_isolation ON {table}"
        " USING ({rows}) WITH CHECK ({rows})"
    ).format(table=sql.Identifier(table), rows=sql.SQL(TENANT_ROWS))


# Under row security the planner may use an index only for an operator whose function is
# LEAKPROOF (else the policy's filter must run first): full-text `@@` and the array operators
# behind the GIN indexes (keyword search, tags, audit subjects) are not marked so in the catalog,
# though none raises an error that depends on the data. Marking them needs a superuser; without
# one, keyword search and tag filters still answer, by a scan.
INDEXED_OPERATOR_FUNCTIONS = [
    "pg_catalog.ts_match_vq(tsvector, tsquery)",
    "pg_catalog.arraycontains(anyarray, anyarray)",
    "pg_catalog.arrayoverlap(anyarray, anyarray)",
]


def grant_app_role(role: str) -> sql.Composed:
    """Data rights (no DDL, no TRUNCATE) on every table and sequence, now and later."""
    return sql.SQL(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};"
        " GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};"
        " ALTER DEFAULT PRIVILEGES IN SCHEMA public"
        " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role};"
        " ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {role};"
        " GRANT EXECUTE ON FUNCTION kindmem_credential_tenant(text, text) TO {role}"
    ).format(role=sql.Identifier(role))


# The tenant of an API key ('key') or a run token ('run') by its public prefix, before any
# tenant is set. SECURITY DEFINER: it runs as the migration role, which row security does not
# confine (a superuser or BYPASSRLS role), and it returns nothing but the tenant id.
CREDENTIAL_TENANT_FUNCTION = """
CREATE OR REPLACE FUNCTION kindmem_credential_tenant(credential_kind text, credential_prefix text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT tenant_id FROM public.kindmem_apikey WHERE $1 = 'key' AND prefix = $2
    UNION ALL
    SELECT tenant_id FROM public.kindmem_run WHERE $1 = 'run' AND token_prefix = $2
    LIMIT 1
$$;
REVOKE ALL ON FUNCTION kindmem_credential_tenant(text, text) FROM PUBLIC
"""
