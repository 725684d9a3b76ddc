"""The reviewer group's permissions: see the queue and the facts it is about, and decide.
Nothing that changes retention policies, write policies, agents or credentials."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

REVIEWER = "reviewer"
GRANTS = [
    ("approvals", "approval", "view_approval"),
    ("approvals", "approval", "decide_approval"),
    ("facts", "fact", "view_fact"),
    ("facts", "revision", "view_revision"),
    ("facts", "subject", "view_subject"),
]


def grant(apps, schema_editor):
    # Permissions are created after migrations run (post_migrate); make them now.
    for label in {app for app, _, _ in GRANTS}:
        config = apps.get_app_config(label)
        config.models_module = True
        create_permissions(config, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=REVIEWER)
    for app, model, codename in GRANTS:
        group.permissions.add(
            Permission.objects.get(
                content_type__app_label=app, content_type__model=model, codename=codename
            )
        )


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.filter(name=REVIEWER).first()
    if group is None:
        return
    for app, model, codename in GRANTS:
        group.permissions.remove(
            *Permission.objects.filter(
                content_type__app_label=app, content_type__model=model, codename=codename
            )
        )


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0001_initial"),
        ("facts", "0001_initial"),
        ("kindmem", "0002_staff_roles"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(grant, revoke)]
