from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """The wiring (settings, urls, Celery, the CLI and `run`, health, demo seeding, the embedded
    PostgreSQL and broker), installed as an app for its management commands. It may import any
    app; no app imports it."""

    name = "config"
    verbose_name = "kindmem wiring"
