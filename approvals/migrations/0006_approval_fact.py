"""Each approval keeps its revision's fact: the approvals about a person are found by their
facts without reading the revisions table (approvals/models.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0005_console_indexes"),
        ("facts", "0006_console_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="approval",
            name="fact",
            field=models.ForeignKey(
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="facts.fact",
            ),
        ),
        migrations.RunSQL(
            "UPDATE approvals_approval a SET fact_id = r.fact_id FROM facts_revision r"
            " WHERE r.id = a.revision_id",
            migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="approval",
            name="fact",
            field=models.ForeignKey(
                editable=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="facts.fact",
            ),
        ),
    ]
