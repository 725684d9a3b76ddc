"""`{% background_work as status %}`: the console's front page says, like /healthz, whether
background work runs (the last worker heartbeat, and under `kindmem run` which process died)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.simple_tag
def background_work() -> dict[str, Any]:
    from config.health import background_check

    return background_check(database_ok=True)
