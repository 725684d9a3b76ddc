"""The environment as kindmem's settings read it: typed readers that fail loudly on a bad
value, and the two facts the one-machine defaults rest on (the data folder, and whether
DATABASE_URL names a database or the embedded PostgreSQL runs)."""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from config.embedded_db import embedded_data_dir


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def _env_number(name: str, default: Any, parse: Any, what: str) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, not {raw!r}") from None


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, not {value!r}")
    return value


DATA_DIR = embedded_data_dir()
EMBEDDED_DATABASE = not os.environ.get("DATABASE_URL")
