"""Whether the broker answers: for /healthz and the console's front page, below every app
that reports it (the Celery app is the one `config` configures, reached as the current one)."""

from __future__ import annotations

from typing import Any

from celery import current_app


def broker_check() -> dict[str, Any]:
    """`ok` and the transport, or why not (one connection attempt, 2 s at most)."""
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return {"ok": True, "transport": conn.transport_cls}
    except Exception as exc:  # a health check reports every failure, whatever its kind
        return {"ok": False, "error": exc.__class__.__name__}
