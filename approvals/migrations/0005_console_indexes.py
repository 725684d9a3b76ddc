"""Indexes of the review console: the queue with every status, oldest first, and a reviewer's
recent decisions. Built concurrently: a live queue keeps taking writes."""

from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("approvals", "0004_verified_slot_reason"),
        ("facts", "0004_pending_successor_beside_current"),
        ("kindmem", "0008_thread_ownership"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="approval",
            index=models.Index(fields=["tenant", "created_at", "id"], name="approval_by_time"),
        ),
        AddIndexConcurrently(
            model_name="approval",
            index=models.Index(
                condition=models.Q(("decided_at__isnull", False)),
                fields=["tenant", "decided_by_user", "-decided_at"],
                name="approval_decided_by",
            ),
        ),
    ]
