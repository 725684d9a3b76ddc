"""Privacy officers may open a fact's page (read only): before erasing a person they judge
what kindmem holds about them, and the person page links each fact. Opening one is a staff
read in the person's audit trail (facts/fact_page.py), as a reviewer's is."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

OFFICER = "privacy-officer"
GRANTS = [
    ("facts", "fact", "view_fact"),
    ("facts", "revision", "view_revision"),
    ("facts", "subject", "view_subject"),
]


def _permissions(apps):
    Permission = apps.get_model("auth", "Permission")
    for app, model, codename in GRANTS:
        yield Permission.objects.get(
            content_type__app_label=app, content_type__model=model, codename=codename
        )


def grant(apps, schema_editor):
    # Permissions are created after migrations run (post_migrate); make them now.
    config = apps.get_app_config("facts")
    config.models_module = True
    create_permissions(config, verbosity=0)
    config.models_module = None
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name=OFFICER)
    group.permissions.add(*_permissions(apps))


def revoke(apps, schema_editor):
    group = apps.get_model("auth", "Group").objects.filter(name=OFFICER).first()
    if group is not None:
        group.permissions.remove(*_permissions(apps))


class Migration(migrations.Migration):
    dependencies = [
        ("privacy", "0002_erasure_target_reference"),
        ("facts", "0006_console_indexes"),
        ("kindmem", "0002_staff_roles"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(grant, revoke)]
