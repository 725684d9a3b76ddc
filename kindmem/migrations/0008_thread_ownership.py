"""Thread ownership (kindmem.threads): the table, its row security, and the owners of the
threads already in use: each conversation's containers first (the conversation is the
thread's own record), then for threads with runs only, the earliest run's."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from kindmem.row_security_sql import tenant_isolation

BACKFILL = """
INSERT INTO kindmem_thread (tenant_id, thread_id, project_id, participant_id, user_id, created_at)
SELECT tenant_id, thread_id, project_id, participant_id,
       CASE WHEN participant_id IS NULL THEN user_id END, created_at
FROM recall_conversation WHERE project_id IS NOT NULL
ON CONFLICT DO NOTHING;
INSERT INTO kindmem_thread (tenant_id, thread_id, project_id, participant_id, user_id, created_at)
SELECT DISTINCT ON (tenant_id, thread_id) tenant_id, thread_id, project_id, participant_id,
       CASE WHEN participant_id IS NULL THEN user_id END, created_at
FROM kindmem_run WHERE thread_id IS NOT NULL
ORDER BY tenant_id, thread_id, created_at
ON CONFLICT DO NOTHING;
"""


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(tenant_isolation("kindmem_thread"))
        cursor.execute(BACKFILL)


class Migration(migrations.Migration):
    dependencies = [
        ("kindmem", "0007_run_minted_by_restrict"),
        ("recall", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Thread",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("thread_id", models.CharField(max_length=200)),
                ("participant_id", models.CharField(blank=True, max_length=200, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="threads",
                        to="kindmem.project",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="threads",
                        to="kindmem.tenant",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="threads",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["tenant", "participant_id"], name="thread_by_participant")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "thread_id"), name="one_owner_per_thread"
                    )
                ],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
