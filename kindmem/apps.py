from django.apps import AppConfig


class KindmemConfig(AppConfig):
    name = "kindmem"
    verbose_name = "Tenancy and credentials"
