from django.apps import AppConfig


class KindmemConfig(AppConfig):
    name = "kindmem"
    verbose_name = "Tenancy and credentials"

    def ready(self) -> None:
        from kindmem import schema  # noqa: F401 - registers the Bearer scheme with the schema
