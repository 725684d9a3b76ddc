"""The database cache table that the write throttle counts in (when no Redis cache is set)."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("kindmem", "0003_erasure_hold")]
    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
