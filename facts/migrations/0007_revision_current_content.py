"""The write's dedup finds the current revision of the same content by its hash (an index),
not by reading every fact of the writer's scope. Built concurrently: a live revisions table
keeps taking writes."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("facts", "0006_console_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="revision",
            index=models.Index(
                condition=models.Q(("invalidated_at__isnull", True)),
                fields=["tenant", "content_hash"],
                name="revision_current_content",
            ),
        ),
    ]
