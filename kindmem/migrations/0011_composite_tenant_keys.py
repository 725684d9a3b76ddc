"""Every tenant-owned table's keys lead with tenant_id (kindmem.distribution_sql)."""

from django.db import migrations

from kindmem.distribution_sql import composite_tenant_keys

# Every app's latest migration: the tables, with their single-column constraints to each other
# already dropped (`tenant_keys`), before their primary keys become composite.
DEPENDENCIES = [
    ("approvals", "0009_tenant_keys"),
    ("audit", "0003_event_error_and_targets"),
    ("extraction", "0003_tenant_keys"),
    ("facts", "0014_tenant_keys"),
    ("kindmem", "0010_tenant_keys"),
    ("privacy", "0003_officer_reads_facts"),
    ("recall", "0003_tenant_keys"),
    ("runlog", "0002_tenant_keys"),
    ("webhooks", "0002_tenant_keys"),
]


class Migration(migrations.Migration):
    dependencies = DEPENDENCIES
    operations = [migrations.RunPython(composite_tenant_keys, migrations.RunPython.noop)]
