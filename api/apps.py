from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Request plumbing"

    def ready(self) -> None:
        from api import schema  # noqa: F401 - registers the Bearer scheme with the schema
