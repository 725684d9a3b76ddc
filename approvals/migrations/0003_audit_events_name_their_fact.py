"""Audit events of remember and review calls name their fact, not only its revision.

Those endpoints recorded the revision id alone, so `GET /v1/audit?fact_id=` missed them; they
now record the fact id too (approvals/views.py `_touch_revision`). This adds the fact id to
the events written before, where the revision still exists (an erased or purged revision
cannot say its fact any more; those events keep what they had).

It lives here, not in audit, because it needs both the audit and the facts tables and audit
sits below facts; and these are the events this app's views wrote.
"""

from django.db import migrations

ENDPOINTS = [
    "POST remember",
    "GET approvals",
    "POST approval-approve",
    "POST approval-reject",
    "POST approval-verify",
]

# The CASE casts only what looks like a UUID (a WHERE clause does not fix the order in which
# PostgreSQL evaluates its conditions), so one odd id cannot stop the migration.
BACKFILL = """
UPDATE audit_auditevent AS e
SET object_ids = e.object_ids || named.fact_ids
FROM (
    SELECT e.seq, array_agg(DISTINCT r.fact_id::text) AS fact_ids
    FROM audit_auditevent AS e
    CROSS JOIN LATERAL unnest(e.object_ids) AS i (id)
    JOIN facts_revision AS r
        ON r.tenant_id = e.tenant_id
        AND r.id = CASE
            WHEN i.id ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$' THEN i.id::uuid
        END
    WHERE e.endpoint = ANY (%s) AND r.fact_id::text <> ALL (e.object_ids)
    GROUP BY e.seq
) AS named
WHERE e.seq = named.seq
"""


def backfill(apps, schema_editor):
    schema_editor.execute(BACKFILL, [ENDPOINTS])


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0002_reviewer_permissions"),
        ("audit", "0001_initial"),
        ("facts", "0003_search_hnsw_ef_construction"),
    ]

    # Events that gained a fact id keep it on the way back: it is true either way.
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
