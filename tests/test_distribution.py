"""Past one server: what stands between the migrated schema and Citus (deploy/citus.md).

On Citus every tenant-owned table is distributed by `tenant_id` and co-located with the others,
so a shard holds whole tenants, and a constraint is checked inside one shard only. Hence:

- every primary key, unique constraint and unique index of a distributed table includes
  `tenant_id` (Citus refuses one that does not);
- every foreign key that points at a distributed table joins on `tenant_id` on both sides
  (`(tenant_id, x) -> (tenant_id, id)`), from another distributed table; a foreign key from a
  distributed table to a reference table may be anything;
- every other table is a reference table, named in REFERENCE_TABLES (copied whole to every
  node; it may point at reference tables only).

What does not hold yet is written down below with its planned migration, one sentence each.
The lists are exact both ways: a new table, key or foreign key that breaks a rule fails here
(no new table adds to the debt), and an entry whose problem is gone fails too (fixed entries
are removed). The catalog is read, not the models, so raw SQL and Django's own tables count.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db

# Global tables: no tenant, replicated to every node with create_reference_table. kindmem_user
# has a tenant_id but stays global: platform staff have none (a distribution column is never
# NULL), and a console sign-in finds the user by username before any tenant is known.
REFERENCE_TABLES: frozenset[str] = frozenset(
    {
        "kindmem_tenant",
        "kindmem_user",
        "kindmem_user_groups",
        "kindmem_user_user_permissions",
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

# "table.tenant_id" (a table neither distributable nor a reference table: it has no tenant_id),
# "table.pkey" or "table.<unique constraint or index>" -> the planned migration. Django's model
# state keeps `id` as the primary key (a uuid4 or a sequence value is unique by itself, and a
# ForeignKey cannot point at a CompositePrimaryKey); the database's key becomes composite.
NOT_YET_DISTRIBUTABLE: dict[str, str] = {
    # Django's many-to-many join tables: no tenant_id, yet they point at distributed tables
    "kindmem_apikey_projects.tenant_id": "an explicit through model with tenant_id (the key's),"
    " unique (tenant_id, apikey_id, project_id), distributed with its key and project.",
    "kindmem_user_orgs.tenant_id": "an explicit through model with tenant_id (the org's),"
    " unique (tenant_id, user_id, org_id), distributed; user_id may keep pointing at kindmem_user.",
    "kindmem_user_projects.tenant_id": "an explicit through model with tenant_id (the project's),"
    " unique (tenant_id, user_id, project_id), distributed like kindmem_user_orgs.",
    # primary keys of tables that other tables point at
    "kindmem_org.pkey": "primary key (tenant_id, id): a composite key, with the foreign keys"
    " that point at it.",
    "kindmem_project.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "kindmem_agent.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "kindmem_apikey.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "kindmem_run.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "facts_fact.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "facts_revision.pkey": "primary key (tenant_id, id), with the foreign keys that point at it.",
    "recall_conversation.pkey": "primary key (tenant_id, id), with the messages' foreign key.",
    "runlog_logentry.pkey": "primary key (tenant_id, id), with caused_by's self-reference.",
    # primary keys nothing points at
    "kindmem_thread.pkey": "primary key (tenant_id, id).",
    "kindmem_erasurehold.pkey": "primary key (tenant_id, id).",
    "facts_subject.pkey": "primary key (tenant_id, id).",
    "facts_link.pkey": "primary key (tenant_id, id).",
    "facts_retentionpolicy.pkey": "primary key (tenant_id, id).",
    "facts_writepolicy.pkey": "primary key (tenant_id, id).",
    "facts_sweepreport.pkey": "primary key (tenant_id, id).",
    "recall_message.pkey": "primary key (tenant_id, id).",
    "approvals_approval.pkey": "primary key (tenant_id, id).",
    "privacy_erasurerequest.pkey": "primary key (tenant_id, id).",
    "privacy_accessrequest.pkey": "primary key (tenant_id, id).",
    "audit_auditevent.pkey": "primary key (tenant_id, seq), seq drawn per tenant from a counter"
    " row locked in the event's transaction, instead of one global sequence and an advisory lock.",
    # unique constraints
    "approvals_approval.approvals_approval_revision_id_key": "unique (tenant_id, revision_id):"
    " still one approval per revision, as a revision has one tenant.",
    "facts_revision.facts_revision_supersedes_id_key": "unique (tenant_id, supersedes_id).",
    "recall_message.message_sequence_per_conversation": "unique (tenant_id, conversation_id,"
    " sequence).",
    "runlog_logentry.log_sequence_per_run": "unique (tenant_id, run_id, sequence).",
    "runlog_logentry.log_no_fork_per_run": "unique (tenant_id, run_id, prev_hash).",
    "kindmem_apikey.kindmem_apikey_prefix_key": "unique (tenant_id, prefix), the prefix's global"
    " uniqueness and its tenant kept in a reference table (prefix -> tenant) that the"
    " credential lookup reads.",
    "kindmem_run.kindmem_run_token_prefix_key": "unique (tenant_id, token_prefix), new run tokens"
    " carrying their tenant, so that finding one's row never crosses shards.",
    # extraction (session 9): the same shape as every other app's, the same plan
    "extraction_conversationextraction.pkey": "primary key (tenant_id, id).",
    "extraction_conversationextraction.extraction_conversationextraction_conversation_id_key": (
        "unique (tenant_id, conversation_id): the one-to-one field becomes a foreign key with a"
        " unique constraint on both columns."
    ),
    "extraction_extractiondecision.pkey": "primary key (tenant_id, id).",
    "extraction_extractionjob.pkey": "primary key (tenant_id, id), with the decisions' key.",
    "extraction_extractionsettings.pkey": "primary key (tenant_id, id).",
    "extraction_extractionusage.pkey": "primary key (tenant_id, id).",
    # webhooks (the outbox): the same shape, the same plan
    "webhooks_endpoint.pkey": "primary key (tenant_id, id), with the deliveries' key.",
    "webhooks_outboxevent.pkey": "primary key (tenant_id, id), with the deliveries' key.",
    "webhooks_delivery.pkey": "primary key (tenant_id, id), with the attempts' key.",
    "webhooks_deliveryattempt.pkey": "primary key (tenant_id, id).",
}

# "table.<column(s)>" of a foreign key to a distributed table that does not join on tenant_id
# (Django's constraint names carry a hash; the column says which key it is) -> the plan: the
# field becomes ForeignKey(db_constraint=False) and the composite constraint is added in SQL.
# Foreign keys to kindmem_tenant and kindmem_user (reference tables) stay as they are.
FOREIGN_KEYS_NOT_YET_DISTRIBUTABLE: dict[str, str] = {
    "kindmem_project.org_id": "(tenant_id, org_id) -> kindmem_org (tenant_id, id).",
    "kindmem_run.agent_id": "(tenant_id, agent_id) -> kindmem_agent (tenant_id, id).",
    "kindmem_run.project_id": "(tenant_id, project_id) -> kindmem_project (tenant_id, id).",
    "kindmem_run.minted_by_id": "(tenant_id, minted_by_id) -> kindmem_apikey (tenant_id, id).",
    "kindmem_thread.project_id": "(tenant_id, project_id) -> kindmem_project (tenant_id, id).",
    "kindmem_apikey_projects.apikey_id": "(tenant_id, apikey_id) -> kindmem_apikey"
    " (tenant_id, id), once the through table has its tenant_id.",
    "kindmem_apikey_projects.project_id": "(tenant_id, project_id) -> kindmem_project"
    " (tenant_id, id), once the through table has its tenant_id.",
    "kindmem_user_orgs.org_id": "(tenant_id, org_id) -> kindmem_org (tenant_id, id), once the"
    " through table has its tenant_id.",
    "kindmem_user_projects.project_id": "(tenant_id, project_id) -> kindmem_project"
    " (tenant_id, id), once the through table has its tenant_id.",
    "facts_fact.org_id": "(tenant_id, org_id) -> kindmem_org (tenant_id, id).",
    "facts_fact.project_id": "(tenant_id, project_id) -> kindmem_project (tenant_id, id).",
    "facts_revision.fact_id": "(tenant_id, fact_id) -> facts_fact (tenant_id, id).",
    "facts_revision.generated_by_run_id": "(tenant_id, generated_by_run_id) -> kindmem_run"
    " (tenant_id, id).",
    "facts_revision.supersedes_id": "(tenant_id, supersedes_id) -> facts_revision (tenant_id, id).",
    "facts_subject.fact_id": "(tenant_id, fact_id) -> facts_fact (tenant_id, id).",
    "facts_subject.revision_id": "(tenant_id, revision_id) -> facts_revision (tenant_id, id).",
    "facts_link.source_id": "(tenant_id, source_id) -> facts_fact (tenant_id, id).",
    "facts_link.target_id": "(tenant_id, target_id) -> facts_fact (tenant_id, id).",
    "recall_conversation.agent_id": "(tenant_id, agent_id) -> kindmem_agent (tenant_id, id).",
    "recall_conversation.project_id": "(tenant_id, project_id) -> kindmem_project (tenant_id, id).",
    "recall_message.conversation_id": "(tenant_id, conversation_id) -> recall_conversation"
    " (tenant_id, id).",
    "runlog_logentry.run_id": "(tenant_id, run_id) -> kindmem_run (tenant_id, id).",
    "runlog_logentry.caused_by_log_id": "(tenant_id, caused_by_log_id) -> runlog_logentry"
    " (tenant_id, id).",
    "approvals_approval.revision_id": "(tenant_id, revision_id) -> facts_revision (tenant_id, id).",
    "approvals_approval.verified_revision_id": "(tenant_id, verified_revision_id) ->"
    " facts_revision (tenant_id, id).",
    "approvals_approval.fact_id": "(tenant_id, fact_id) -> facts_fact (tenant_id, id).",
    "approvals_approval.agent_id": "(tenant_id, agent_id) -> kindmem_agent (tenant_id, id).",
    "approvals_approval.project_id": "(tenant_id, project_id) -> kindmem_project (tenant_id, id).",
    "approvals_approval.run_id": "(tenant_id, run_id) -> kindmem_run (tenant_id, id).",
    "extraction_conversationextraction.conversation_id": "(tenant_id, conversation_id) ->"
    " recall_conversation (tenant_id, id).",
    "extraction_extractiondecision.conversation_id": "(tenant_id, conversation_id) ->"
    " recall_conversation (tenant_id, id).",
    "extraction_extractiondecision.job_id": "(tenant_id, job_id) -> extraction_extractionjob"
    " (tenant_id, id).",
    "extraction_extractionjob.agent_id": "(tenant_id, agent_id) -> kindmem_agent (tenant_id, id).",
    "extraction_extractionjob.conversation_id": "(tenant_id, conversation_id) ->"
    " recall_conversation (tenant_id, id).",
    "extraction_extractionjob.run_id": "(tenant_id, run_id) -> kindmem_run (tenant_id, id).",
    "extraction_extractionusage.agent_id": "(tenant_id, agent_id) -> kindmem_agent"
    " (tenant_id, id).",
    "webhooks_delivery.endpoint_id": "(tenant_id, endpoint_id) -> webhooks_endpoint"
    " (tenant_id, id).",
    "webhooks_delivery.event_id": "(tenant_id, event_id) -> webhooks_outboxevent (tenant_id, id).",
    "webhooks_deliveryattempt.delivery_id": "(tenant_id, delivery_id) -> webhooks_delivery"
    " (tenant_id, id).",
}


def _public_tables() -> dict[str, bool]:
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
    return {t for t, has_tenant in _public_tables().items() if has_tenant} - REFERENCE_TABLES


def undistributable_findings() -> set[str]:
    """Tables that are neither (no tenant_id, not a reference table), and every primary key,
    unique constraint, unique index or exclusion constraint of a distributed table whose key
    columns leave tenant_id out."""
    tables = _public_tables()
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
    tables = _public_tables()
    tenant_models = {
        model._meta.db_table
        for model in apps.get_models(include_auto_created=True)
        if any(field.column == "tenant_id" for field in model._meta.concrete_fields)
    }

    # when: each is sorted into distributed (a tenant_id) or reference (named above)
    with_tenant = {table for table, has_tenant in tables.items() if has_tenant}

    # then: the catalog and the models agree on who has a tenant, every reference table named
    # still exists, and kindmem_user is the one table with a tenant kept global (a table
    # that is neither is a `.tenant_id` entry of NOT_YET_DISTRIBUTABLE, checked below)
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


def test_every_unique_key_of_a_distributed_table_includes_tenant_id_but_the_written_down():
    # given: the tables with no tenant_id that are not reference tables, and the keys, unique
    # constraints and unique indexes of every table to distribute
    # when: those tables, and the keys whose columns leave tenant_id out, are found
    found = undistributable_findings()

    # then: they are exactly the written-down ones, each with its plan (a new one fails; a
    # fixed one must leave the list)
    assert sorted(found - NOT_YET_DISTRIBUTABLE.keys()) == [], (
        "new: put tenant_id in the key (a table with no tenant: REFERENCE_TABLES, if it is global)"
    )
    assert sorted(NOT_YET_DISTRIBUTABLE.keys() - found) == [], "fixed: remove from the list"
    assert all(plan.strip() for plan in NOT_YET_DISTRIBUTABLE.values())


def test_every_foreign_key_to_a_distributed_table_joins_on_tenant_id_but_the_written_down():
    # given: the foreign keys that point at a table to distribute
    # when: the ones that do not join on tenant_id (or come from a table kept global) are found
    found = foreign_key_findings()

    # then: they are exactly the written-down ones, each with its plan
    assert sorted(found - FOREIGN_KEYS_NOT_YET_DISTRIBUTABLE.keys()) == [], "new: join on tenant_id"
    assert sorted(FOREIGN_KEYS_NOT_YET_DISTRIBUTABLE.keys() - found) == [], "fixed: remove it"
    assert all(plan.strip() for plan in FOREIGN_KEYS_NOT_YET_DISTRIBUTABLE.values())
