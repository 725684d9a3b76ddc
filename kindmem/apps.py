from django.apps import AppConfig


class KindmemConfig(AppConfig):
    name = "kindmem"
    verbose_name = "Tenancy and credentials"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from kindmem import schema  # noqa: F401 - registers the Bearer scheme with the schema

        # Every app's console_names module: how the console names its rows (like admin.py,
        # found here so that a lower app's page names a higher app's rows without importing it).
        autodiscover_modules("console_names")
