"""Indexes of the console's front page: revisions written per day (read from the index alone),
and the embedding backlog. Built concurrently: a live revisions table keeps taking writes."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("facts", "0005_embedding_waiting"),
        ("kindmem", "0008_thread_ownership"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="revision",
            index=models.Index(
                fields=["tenant", "created_at"],
                include=("trust", "review", "invalidated_at", "invalidation_reason"),
                name="revision_written",
            ),
        ),
        AddIndexConcurrently(
            model_name="revision",
            index=models.Index(
                condition=models.Q(
                    ("embedding_state__in", ["pending", "failed"]), ("invalidated_at__isnull", True)
                ),
                fields=["tenant", "embedding_state"],
                name="revision_embedding_backlog",
            ),
        ),
    ]
