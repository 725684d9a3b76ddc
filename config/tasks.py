"""Background work of the wiring, on beat: the worker's probe of the servers kindmem calls out
to (the embedder's, the chat model's), every KINDMEM_HEARTBEAT_INTERVAL_SECONDS, which /healthz
reports so that an anonymous health check never waits on them (config/health.py); and the state
gauges of /metrics (config/metrics.py)."""

from __future__ import annotations

import logging
import re
import socket
import time
from datetime import datetime
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db.models import Min, Sum
from django.utils import timezone

from approvals.models import Approval
from config import metrics
from embeddings.providers import embedder_health
from extraction.models import ExtractionJob, ExtractionUsage, JobStatus
from extraction.provider import extraction_health
from facts.models import EmbeddingState, Revision
from kindmem.row_security import each_tenant
from kindmem.services import heartbeat_checks_record
from privacy.models import ErasureRequest
from webhooks.delivery import deliveries_state

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


@shared_task(name="config.tasks.refresh_metrics", soft_time_limit=50, time_limit=60, max_retries=0)
def refresh_metrics() -> None:
    """Beat: count the state gauges over every tenant (each confined to its own, as every task
    reads), and each queue's depth. Totals only: no tenant is a label. Nothing with metrics
    off."""
    if not settings.METRICS:
        return
    now = timezone.now()
    pending = erasures = 0
    oldest_review: datetime | None = None
    oldest_erasure: datetime | None = None
    jobs = dict.fromkeys(JobStatus.values, 0)
    backlog = tokens_in = tokens_out = 0
    hooks_pending = hooks_failed = 0
    oldest_hook: datetime | None = None
    for tenant_id in each_tenant():
        queue = Approval.objects.of_tenant(tenant_id).pending()
        pending += queue.count()
        oldest_review = _earliest(oldest_review, queue.aggregate(t=Min("created_at"))["t"])
        unfinished = ErasureRequest.objects.filter(tenant_id=tenant_id).unfinished()
        erasures += unfinished.count()
        oldest_erasure = _earliest(oldest_erasure, unfinished.aggregate(t=Min("created_at"))["t"])
        for status in ExtractionJob.objects.of_tenant(tenant_id).values_list("status", flat=True):
            jobs[status] = jobs.get(status, 0) + 1
        spent = (
            ExtractionUsage.objects.of_tenant(tenant_id)
            .filter(day=now.date())
            .aggregate(i=Sum("tokens_in"), o=Sum("tokens_out"))
        )
        tokens_in += spent["i"] or 0
        tokens_out += spent["o"] or 0
        backlog += (
            Revision.objects.of_tenant(tenant_id)
            .current()
            .filter(embedding_state=EmbeddingState.PENDING)
            .count()
        )
        hooks = deliveries_state(now=now)
        hooks_pending += hooks.pending
        hooks_failed += hooks.failed_last_day
        oldest_hook = _earliest(oldest_hook, hooks.oldest_pending)
    metrics.WEBHOOK_DELIVERIES.labels("pending").set(hooks_pending)
    metrics.WEBHOOK_DELIVERIES.labels("failed").set(hooks_failed)
    metrics.WEBHOOK_OLDEST.set(_age(now, oldest_hook))
    metrics.REVIEW_PENDING.set(pending)
    metrics.REVIEW_OLDEST.set(_age(now, oldest_review))
    metrics.ERASURES.set(erasures)
    metrics.ERASURE_OLDEST.set(_age(now, oldest_erasure))
    for status, count in jobs.items():
        metrics.EXTRACTION_JOBS.labels(status).set(count)
    metrics.EXTRACTION_TOKENS.labels("in").set(tokens_in)
    metrics.EXTRACTION_TOKENS.labels("out").set(tokens_out)
    metrics.EMBEDDING_BACKLOG.labels("revision").set(backlog)
    depth = _queue_depth(settings.CELERY_TASK_DEFAULT_QUEUE)
    if depth is not None:
        metrics.QUEUE_DEPTH.labels(settings.CELERY_TASK_DEFAULT_QUEUE).set(depth)
    metrics.STATE_REFRESHED.set(time.time())


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return min((t for t in (a, b) if t is not None), default=None)


def _age(now: datetime, since: datetime | None) -> float:
    return 0.0 if since is None else max((now - since).total_seconds(), 0.0)


def _queue_depth(queue: str) -> int | None:
    """Messages waiting in `queue`, as the broker says (a passive declare); None when it does
    not answer (the health check says why)."""
    from config.celery import app

    try:
        with app.connection_for_read() as connection:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
            return int(declared.message_count)
    except Exception:  # a metric is skipped, never a failed task, when the broker is away
        return None
