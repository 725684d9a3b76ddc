"""A revision's approval (`approved_at`: the API's `review: approved`), never beside a pending
review; and the console's facts list newest first, down an index.

Nothing here stops a live table's writes: the column is nullable (no rewrite), the check is
added NOT VALID and then validated under a lock that lets writes go on, and the index is
built concurrently."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

CHECK = "revision_pending_not_approved"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("facts", "0008_write_policy_mutable_fields"),
    ]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="approved_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="revision",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("review__isnull", True), ("approved_at__isnull", True), _connector="OR"
                        ),
                        name=CHECK,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"ALTER TABLE facts_revision ADD CONSTRAINT {CHECK}"
                    " CHECK (review IS NULL OR approved_at IS NULL) NOT VALID",
                    reverse_sql=f"ALTER TABLE facts_revision DROP CONSTRAINT {CHECK}",
                ),
                migrations.RunSQL(
                    f"ALTER TABLE facts_revision VALIDATE CONSTRAINT {CHECK}",
                    reverse_sql=migrations.RunSQL.noop,
                ),
            ],
        ),
        AddIndexConcurrently(
            model_name="fact",
            index=models.Index(fields=["tenant", "-created_at", "-id"], name="fact_recent"),
        ),
    ]
