from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Console"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        # Every app's console_names module: how the console names its rows (like admin.py,
        # found here so that a lower app's page names a higher app's rows without importing it).
        autodiscover_modules("console_names")
