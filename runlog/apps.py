from django.apps import AppConfig


class RunlogConfig(AppConfig):
    name = "runlog"
    verbose_name = "Run log"
