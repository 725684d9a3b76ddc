"""Row-level security on every tenant-owned table, the app role's grants, the credential lookup.

Run by the migration role (the tables' owner). The app role (settings.KINDMEM_APP_ROLE) gets
data rights only: it owns nothing, so it can neither disable the policies nor alter a table.
A table added later that has a `tenant_id` gets the same with `tenant_isolation(table)`;
tests/hardening/test_row_security.py fails while any tenant table lacks it.
"""

from django.conf import settings
from django.db import migrations

from kindmem.row_security_sql import (
    CREDENTIAL_TENANT_FUNCTION,
    INDEXED_OPERATOR_FUNCTIONS,
    grant_app_role,
    tenant_isolation,
)

# Every table with a tenant_id but kindmem_user: the login table is read before any tenant is
# known (a console sign-in by username), and platform superusers belong to no tenant.
TENANT_TABLES = [
    "kindmem_org",
    "kindmem_project",
    "kindmem_agent",
    "kindmem_apikey",
    "kindmem_run",
    "kindmem_erasurehold",
    "facts_fact",
    "facts_revision",
    "facts_subject",
    "facts_link",
    "facts_retentionpolicy",
    "facts_writepolicy",
    "facts_sweepreport",
    "recall_conversation",
    "recall_message",
    "runlog_logentry",
    "audit_auditevent",
    "audit_auditpolicy",
    "approvals_approval",
    "privacy_erasurerequest",
    "privacy_accessrequest",
]


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TENANT_TABLES:
            cursor.execute(tenant_isolation(table))
        cursor.execute(CREDENTIAL_TENANT_FUNCTION)
        cursor.execute("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user")
        migration_role, superuser = cursor.fetchone()
        if migration_role != settings.KINDMEM_APP_ROLE:
            cursor.execute(grant_app_role(settings.KINDMEM_APP_ROLE))
        if superuser:
            for function in INDEXED_OPERATOR_FUNCTIONS:
                cursor.execute(f"ALTER FUNCTION {function} LEAKPROOF")


class Migration(migrations.Migration):
    dependencies = [
        ("kindmem", "0005_agent_tools"),
        ("facts", "0003_search_hnsw_ef_construction"),
        ("recall", "0001_initial"),
        ("runlog", "0001_initial"),
        ("audit", "0001_initial"),
        ("approvals", "0002_reviewer_permissions"),
        ("privacy", "0001_initial"),
        ("sessions", "0001_initial"),
        ("admin", "0003_logentry_add_action_flag_choices"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
