"""A pending value records the version of the fact's approved value it was computed from
(`Revision.base_version`), so that approving it is a compare-and-swap (`facts.stale`)."""

from django.db import migrations, models

# The existing values that ever waited for review: their base is the fact's approved value
# current when they were written. Versions are numbered under the fact's row lock, so that is
# the highest approved version below theirs that was written by then (an earlier pending value
# approved later took its record time then, and a later number) and not yet invalidated (a value
# deleted before this one was written is no base: it was not there). None: no approved value
# then, a new fact.
BACKFILL = """
UPDATE facts_revision AS p SET base_version = (
    SELECT b.version FROM facts_revision AS b
    WHERE b.tenant_id = p.tenant_id AND b.fact_id = p.fact_id AND b.review IS NULL
      AND b.version < p.version AND b.created_at <= p.created_at
      AND (b.invalidated_at IS NULL OR b.invalidated_at >= p.created_at)
    ORDER BY b.version DESC LIMIT 1
)
WHERE p.review = 'pending'
"""


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0011_write_policy_dedup_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="base_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.CheckConstraint(
                condition=models.Q(("base_version__isnull", True))
                | models.Q(("base_version__lt", models.F("version"))),
                name="revision_base_version_before",
            ),
        ),
    ]
