"""On a Citus coordinator, distribute the tenant-owned tables by tenant_id and make the global
ones reference tables; on plain PostgreSQL, nothing (kindmem.distribution_sql.distribute).

Not atomic: Citus creates shards on the workers over their own connections, which must see the
tables and the data already committed."""

from django.db import migrations

from kindmem.distribution_sql import distribute


class Migration(migrations.Migration):
    atomic = False
    dependencies = [
        ("kindmem", "0011_composite_tenant_keys"),
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("sessions", "0001_initial"),
    ]
    operations = [migrations.RunPython(distribute, migrations.RunPython.noop)]
