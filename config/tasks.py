"""The worker's probe of the servers kindmem calls out to (the embedder's, the chat model's),
every KINDMEM_HEARTBEAT_INTERVAL_SECONDS (beat): /healthz reports what it found, so that an
anonymous health check never waits on them (config/health.py)."""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

from celery import shared_task

from embeddings.providers import embedder_health
from extraction.provider import extraction_health
from kindmem.services import heartbeat_checks_record

logger = logging.getLogger(__name__)

# What /healthz may show of each probe: no address of a server, and in an error message none
# either (it is anyone's to read).
PUBLIC = {
    "embedder": ("provider", "ok", "model", "dimensions", "runtime", "loaded", "error"),
    "extraction": ("ok", "available", "model", "error"),
}
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+")


def public(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """`report` without what /healthz must not show (addresses), its error's URLs blanked."""
    shown = {k: v for k, v in report.items() if k in PUBLIC[name]}
    if isinstance(shown.get("error"), str):
        shown["error"] = _URL.sub("<url>", shown["error"])
    return shown


@shared_task(
    name="config.tasks.probe_dependencies", soft_time_limit=20, time_limit=30, max_retries=0
)
def probe_dependencies() -> None:
    """Probe the embedder and the chat model (each one short request, no retries), and keep
    what was found with this worker's heartbeat."""
    checks = {"embedder": embedder_health(), "extraction": extraction_health()}
    for name, report in checks.items():
        if not report.get("ok", False):
            logger.warning("the %s probe failed: %s", name, report.get("error"))
    heartbeat_checks_record(
        hostname=socket.gethostname(),
        checks={name: public(name, report) for name, report in checks.items()},
    )
