from django.apps import AppConfig
from django.db.backends.signals import connection_created


class KindmemConfig(AppConfig):
    name = "kindmem"
    verbose_name = "Tenancy and credentials"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from kindmem import schema  # noqa: F401 - registers the Bearer scheme with the schema
        from kindmem.compiled.statements import register_vector_params

        connection_created.connect(register_vector_params, dispatch_uid="kindmem-vector-params")

        # Every app's console_names module: how the console names its rows (like admin.py,
        # found here so that a lower app's page names a higher app's rows without importing it).
        autodiscover_modules("console_names")
