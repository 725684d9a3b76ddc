from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"

    def ready(self) -> None:
        # "Extract after each appended batch" (a tenant's settings name the agents): recall
        # calls the one hook it knows after an append (recall/appended.py).
        from extraction.services import extraction_after_append
        from recall.appended import after_append_connect

        after_append_connect(extraction_after_append)
