"""/healthz: database, broker, embedder, extraction's chat model and background work (worker
heartbeat, supervised processes), each `ok` or why not.

Anyone may ask it, so it calls nothing outside kindmem's own database and broker: what the
embedder's and the chat model's servers answer is the worker's last probe of them
(config/tasks.py, every heartbeat interval), read from its heartbeat row, and no server's
address is shown."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone

from api.broker import broker_check
from config.tasks import public
from embeddings.providers import embedder_health
from extraction.provider import extraction_health, get_provider
from kindmem.models import WorkerHeartbeat


def healthz(request: Any) -> JsonResponse:
    """Database, broker, embedder and background work, each `ok` or why not.

    503 only when the database fails: that is the web itself. A broker that does not answer or
    a worker whose heartbeat is older than KINDMEM_HEARTBEAT_STALE_SECONDS makes the answer
    `degraded` (still 200), since reads and writes go on and the work queued meanwhile runs when
    the worker is back: a load balancer must not take the API down for it."""
    checks: dict[str, dict[str, Any]] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        checks["database"] = {"ok": True, "pgvector": row[0] if row else None}
    except Exception as exc:  # a health check reports every failure, whatever its kind
        checks["database"] = {"ok": False, "error": exc.__class__.__name__}
    checks["broker"] = broker_check()
    last = None
    if checks["database"]["ok"]:
        last = WorkerHeartbeat.objects.order_by("-seen_at").first()
    probed = last.checks if last is not None else {}
    # Reported, never fatal: without embeddings keyword search and writes still work. A local
    # model (or none) is this process's own; a server's answer is the worker's last probe.
    if settings.EMBEDDER == "openai":
        checks["embedder"] = probed.get("embedder") or _not_probed(provider="openai")
    else:
        checks["embedder"] = public("embedder", embedder_health())
    # Reported, never fatal either: without a chat model extraction answers 503, loudly.
    if get_provider() is None:
        checks["extraction"] = public("extraction", extraction_health())
    else:
        checks["extraction"] = probed.get("extraction") or _not_probed(available=False)
    checks["background"] = background_check(database_ok=checks["database"]["ok"], last=last)
    if not checks["database"]["ok"]:
        state = "down"
    elif checks["broker"]["ok"] and checks["background"]["ok"]:
        state = "ok"
    else:
        state = "degraded"
    return JsonResponse(
        {"ok": state != "down", "status": state, "checks": checks},
        status=503 if state == "down" else 200,
    )


def _not_probed(**report: Any) -> dict[str, Any]:
    return {**report, "ok": False, "error": "No worker has probed it yet."}


def background_check(*, database_ok: bool, last: Any = False) -> dict[str, Any]:
    """The age of the last worker heartbeat (beat queues one every
    KINDMEM_HEARTBEAT_INTERVAL_SECONDS; its age covers beat, broker and worker), and, under
    `kindmem run`, what its supervisor says of each process (config/supervisor.py). `last`:
    the heartbeat row if the caller read it already."""
    stale_after = settings.HEARTBEAT_STALE_SECONDS
    check: dict[str, Any] = {"ok": False, "stale_after_seconds": stale_after}
    if database_ok:
        if last is False:
            last = WorkerHeartbeat.objects.order_by("-seen_at").first()
        age = round((timezone.now() - last.seen_at).total_seconds()) if last else None
        check["last_heartbeat_seconds_ago"] = age
        check["ok"] = age is not None and age <= stale_after
    processes = _supervised_processes()
    if processes is not None:
        check["processes"] = processes
        if not all(p["running"] for p in processes.values()):
            check["ok"] = False
    return check


def _supervised_processes() -> dict[str, Any] | None:
    """The state `kindmem run` keeps of its children, if this web runs under it."""
    state_file = settings.DATA_DIR / "supervisor.json"
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    if state.get("stopping") or not _alive(state.get("pid")):
        return None
    return {
        name: {
            "running": child["running"],
            "restarts": child["restarts"],
            "last_exit": child["last_exit"],
            "last_exit_seconds_ago": (
                round(time.time() - child["last_exit_at"]) if child["last_exit_at"] else None
            ),
        }
        for name, child in state["children"].items()
    }


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
