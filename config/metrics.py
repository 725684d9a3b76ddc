"""Prometheus metrics: what an operator watches, at `/metrics`, never public.

`/metrics` answers only a Bearer credential of its own, `KINDMEM_METRICS_TOKEN` (compared in
constant time); with none set it is not served (404, as any unknown path). No label is ever a
tenant, a person or an id: routes are Django's route patterns (`v1/facts/<str:fact_id>`), the
credential is its kind, and the state is counted over every tenant.

Multi-process: gunicorn's workers, the ASGI process, the Celery worker's children and beat each
count in files of their own under `PROMETHEUS_MULTIPROC_DIR` (prometheus-client's multiprocess
mode; `kindmem run` sets it and empties it at start, and gunicorn's `child_exit` marks a dead
worker's gauges gone), and a scrape of any web process adds them all up. Without the variable
(one process, the tests' own) the process's registry is served.

`KINDMEM_METRICS=off` counts nothing (no middleware, no task outcomes, no state refresh, no
multiprocess files) and /metrics is not served: the figure of what counting costs is in
bench/README.md ("observability.py").

What is counted where:
- requests by route, method, status and credential kind, with a latency histogram per route
  (`MetricsMiddleware`, first in the stack, so a 413 or 429 that a later middleware answers
  counts too); the requests shed (429 by a credential's concurrency limit or its throttle, 503
  by a busy process or database), including the ASGI process's own refusals
  (config/admission.py), which never reach Django;
- the database pool of an ASGI process (connections in use, idle, requests waiting for one);
- Celery task outcomes by task (config/celery.py's signals);
- the state a worker refreshes (`config.tasks.refresh_metrics`, on beat): review queue size and
  the age of its oldest pending memory, erasures in progress and the oldest's age, extraction
  jobs by status and the tokens spent today, the embedding backlog, each queue's depth, the
  webhook deliveries waiting and given up, and the oldest waiting one's age.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

REQUESTS = Counter(
    "kindmem_http_requests",
    "HTTP requests answered, by route pattern, method, status and credential kind.",
    ["route", "method", "status", "credential"],
)
LATENCY = Histogram(
    "kindmem_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
SHED = Counter(
    "kindmem_requests_shed",
    "Requests refused to keep the service up: 429 (a credential's limit), 503 (busy).",
    ["status"],
)
POOL = Gauge(
    "kindmem_db_pool_connections",
    "An ASGI process's database pool: connections in use, idle, and requests waiting.",
    ["state"],
    multiprocess_mode="livesum",
)
TASKS = Counter(
    "kindmem_celery_tasks",
    "Celery tasks finished, by task and outcome (success, failure, retry).",
    ["task", "outcome"],
)
# The state the worker refreshes: the most recent value any process wrote.
REVIEW_PENDING = Gauge(
    "kindmem_review_pending",
    "Memories waiting for review.",
    multiprocess_mode="mostrecent",
)
REVIEW_OLDEST = Gauge(
    "kindmem_review_oldest_pending_age_seconds",
    "How long the oldest memory waiting for review has waited (0: none waits).",
    multiprocess_mode="mostrecent",
)
ERASURES = Gauge(
    "kindmem_erasures_in_progress",
    "Erasures pending or running.",
    multiprocess_mode="mostrecent",
)
ERASURE_OLDEST = Gauge(
    "kindmem_erasure_oldest_age_seconds",
    "How long the oldest unfinished erasure has been asked for (0: none).",
    multiprocess_mode="mostrecent",
)
EXTRACTION_JOBS = Gauge(
    "kindmem_extraction_jobs",
    "Extraction jobs by status.",
    ["status"],
    multiprocess_mode="mostrecent",
)
EXTRACTION_TOKENS = Gauge(
    "kindmem_extraction_tokens_today",
    "Tokens extraction spent today (UTC), in and out.",
    ["direction"],
    multiprocess_mode="mostrecent",
)
EMBEDDING_BACKLOG = Gauge(
    "kindmem_embedding_backlog",
    "Revisions and messages without a vector of the configured model.",
    ["kind"],
    multiprocess_mode="mostrecent",
)
QUEUE_DEPTH = Gauge(
    "kindmem_celery_queue_depth",
    "Messages waiting in each Celery queue.",
    ["queue"],
    multiprocess_mode="mostrecent",
)
WEBHOOK_DELIVERIES = Gauge(
    "kindmem_webhook_deliveries",
    "Webhook deliveries waiting to be sent (pending) and given up in the last day (failed).",
    ["status"],
    multiprocess_mode="mostrecent",
)
WEBHOOK_OLDEST = Gauge(
    "kindmem_webhook_oldest_pending_age_seconds",
    "How long the oldest webhook delivery still waiting has waited (0: none waits).",
    multiprocess_mode="mostrecent",
)
STATE_REFRESHED = Gauge(
    "kindmem_state_refreshed_timestamp_seconds",
    "When the worker last refreshed the state gauges (Unix time).",
    multiprocess_mode="mostrecent",
)

SHED_STATUSES = (429, 503)


def registry() -> CollectorRegistry:
    """What a scrape reads: every process's files in multiprocess mode, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        collected = CollectorRegistry()
        multiprocess.MultiProcessCollector(collected)
        return collected
    return REGISTRY


def metrics(request: HttpRequest) -> HttpResponse:
    """`/metrics` in Prometheus' text format, for the metrics credential only."""
    token = settings.METRICS_TOKEN
    if not token or not settings.METRICS:
        raise Http404("No metrics credential is configured.")
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse(
            b'{"code": "unauthenticated", "message": "The metrics credential is needed.",'
            b' "details": null}',
            status=401,
            content_type="application/json",
        )
        response["WWW-Authenticate"] = 'Bearer realm="kindmem-metrics"'
        return response
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


def credential_kind(request: HttpRequest) -> str:
    """The kind of credential a request was answered for: an API key's or run token's kind,
    a console session, or none. Never which one."""
    principal = getattr(request, "auth", None)
    kind = getattr(principal, "kind", None)
    if kind is not None:
        return str(kind)
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return "session"
    return "none"


class MetricsMiddleware:
    """Counts every request Django answers, by route pattern (bounded: the URL conf's), method,
    status and credential kind, and times it. With metrics off (KINDMEM_METRICS=off) Django
    leaves it out of the stack."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.METRICS:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        REQUESTS.labels(route, method, str(response.status_code), credential_kind(request)).inc()
        LATENCY.labels(route, method).observe(time.perf_counter() - started)
        if response.status_code in SHED_STATUSES:
            SHED.labels(str(response.status_code)).inc()
        pool_observe()
        return response


_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


def pool_observe() -> None:
    """The default connection's pool, if this process has one (ASGI): in use, idle, waiting."""
    from django.db import connection

    pool = getattr(connection, "pool", None) if _pooled() else None
    if pool is None:
        return
    stats: dict[str, Any] = pool.get_stats()
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    POOL.labels("in_use").set(max(size - idle, 0))
    POOL.labels("idle").set(idle)
    POOL.labels("waiting").set(stats.get("requests_waiting", 0))


def _pooled() -> bool:
    return bool(settings.DATABASES["default"].get("OPTIONS", {}).get("pool"))
