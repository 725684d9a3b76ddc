"""An event's failure message, and the fact types and scopes it touched (the 003 seed's `error`,
`kind` and `scope`), with the GIN index the type and scope filters use. Built concurrently:
a live audit table keeps taking every request's event.

Under row security the planner uses that index only if `@>` on jsonb is LEAKPROOF (see
kindmem/row_security_sql.py); `jsonb_contains` raises no error that depends on the rows it
compares. Marking it needs a superuser; without one the filters still answer, by a scan of the
tenant's events."""

import django.contrib.postgres.indexes
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

JSONB_CONTAINS = "pg_catalog.jsonb_contains(jsonb, jsonb)"


def jsonb_contains_leakproof(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        [superuser] = cursor.fetchone()
        if superuser:
            cursor.execute(f"ALTER FUNCTION {JSONB_CONTAINS} LEAKPROOF")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("audit", "0002_audit_policies_plural"),
        ("kindmem", "0008_thread_ownership"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="error",
            field=models.CharField(
                blank=True, help_text="A failure's message, as the caller was told.", max_length=500
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="targets",
            field=models.JSONField(blank=True, default=list),
        ),
        AddIndexConcurrently(
            model_name="auditevent",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["targets"], name="audit_targets", opclasses=["jsonb_path_ops"]
            ),
        ),
        # Left LEAKPROOF when reversed: another index may rely on it by then.
        migrations.RunPython(jsonb_contains_leakproof, migrations.RunPython.noop, elidable=False),
    ]
