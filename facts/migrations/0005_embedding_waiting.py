# embed_revisions tops its batch up with a tenant's revisions still waiting for a vector
# (RevisionQuerySet.waiting_for_embedding). Built concurrently: writes go on meanwhile.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("facts", "0004_pending_successor_beside_current"),
        ("kindmem", "0008_thread_ownership"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="revision",
            index=models.Index(
                condition=models.Q(
                    ("embedding_state", "pending"), ("invalidated_at__isnull", True)
                ),
                fields=["tenant", "created_at"],
                name="revision_embedding_waiting",
            ),
        ),
    ]
