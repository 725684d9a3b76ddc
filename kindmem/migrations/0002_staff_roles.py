"""The console's two staff roles, as groups: reviewers decide pending facts, privacy officers
answer access and erasure requests. Permissions are attached by the apps that own the models."""

from django.db import migrations

ROLES = ["reviewer", "privacy-officer"]


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("kindmem", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_roles, remove_roles)]
