"""One current *approved* revision per fact: a successor pending review may wait beside it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0003_search_hnsw_ef_construction"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="revision",
            name="one_current_revision_per_fact",
        ),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.UniqueConstraint(
                condition=models.Q(("invalidated_at__isnull", True), ("review__isnull", True)),
                fields=("tenant", "fact"),
                name="one_current_revision_per_fact",
            ),
        ),
    ]
