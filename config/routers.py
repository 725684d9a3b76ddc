from __future__ import annotations

from typing import Any

CACHE_ALIAS = "cache"


class CacheRouter:
    """The database cache's table is read and written through the `cache` connection (the same
    database, its own autocommit session); nothing is migrated through that alias."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return CACHE_ALIAS if model._meta.app_label == "django_cache" else None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return CACHE_ALIAS if model._meta.app_label == "django_cache" else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        # nor through the read replica's (kindmem/replica.py), which replays the primary's
        return False if db in {CACHE_ALIAS, "replica"} else None
