from django.apps import AppConfig
from django.db.backends.signals import connection_created


class FactsConfig(AppConfig):
    name = "facts"

    def ready(self) -> None:
        from facts.search import apply_scan_settings

        connection_created.connect(apply_scan_settings, dispatch_uid="facts-scan-settings")
