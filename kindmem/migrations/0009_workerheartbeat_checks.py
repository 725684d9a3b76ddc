"""The worker's probe of the embedder's and the chat model's servers, kept with its heartbeat
(config/tasks.py) for /healthz to report without calling them."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("kindmem", "0008_thread_ownership")]

    operations = [
        migrations.AddField(
            model_name="workerheartbeat",
            name="checks",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
