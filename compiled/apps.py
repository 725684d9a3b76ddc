from django.apps import AppConfig
from django.db.backends.signals import connection_created


class CompiledConfig(AppConfig):
    name = "compiled"
    verbose_name = "Compiled queries"

    def ready(self) -> None:
        from compiled.statements import register_vector_params

        connection_created.connect(register_vector_params, dispatch_uid="kindmem-vector-params")
