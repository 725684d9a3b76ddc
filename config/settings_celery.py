"""Celery's settings: its broker, how a task is delivered, acknowledged and retried, and beat's
schedule. config/settings.py imports them by name."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from config.broker import TRANSPORT_OPTIONS as EMBEDDED_TRANSPORT_OPTIONS
from config.broker import embedded_broker_url, is_embedded_url
from config.settings_env import DATA_DIR, env_int

# Celery: every setting that decides whether a task can be lost or run twice is here, with why.
# Tasks are idempotent (safe to run twice, CONVENTIONS 15), so every choice below prefers
# delivering a message again over losing it.
#
# The broker: CELERY_BROKER_URL (Redis or RabbitMQ in production, e.g. redis://redis:6379/0),
# else the embedded Valkey that `kindmem run` starts and supervises, on a Unix socket under
# KINDMEM_DATA_DIR (config/broker.py; the choice is measured in bench/README.md).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or embedded_broker_url(DATA_DIR)
# The queue tasks go to and workers read (tests that share a Redis give each worker its own).
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("KINDMEM_CELERY_QUEUE", "celery")
# Acknowledge a message when its task has finished, not when a worker takes it: a task whose
# worker dies mid-run is delivered again instead of vanishing.
CELERY_TASK_ACKS_LATE = True
# ...also when the pool process running it is killed (SIGKILL, out of memory): without this,
# Celery acknowledges such a task as failed and it never runs again.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A task that raised or hit its time limit is acknowledged (not redelivered forever): retrying
# is each task's explicit, bounded choice (autoretry_for, max_retries).
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
# A worker process reserves at most one message beyond the one it runs: nothing waits behind a
# long task in one worker while another is idle, and a dying worker holds as little as possible.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Hard and soft time limits for every task (tasks may set lower ones of their own).
CELERY_TASK_TIME_LIMIT = env_int("KINDMEM_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30
# Redis only (RabbitMQ acknowledges natively): a message taken but not acknowledged within the
# visibility timeout is handed to another worker; that is how a SIGKILLed worker's tasks come
# back. It must outlast the longest a live worker may hold a message, a retry's countdown (at
# most Celery's retry_backoff_max, 600 s) plus the hard time limit, or a task still running is
# delivered a second time. Under `kindmem run` the supervisor does not wait for it: when its
# one worker dies it puts that worker's messages back at once (config/supervisor.py).
BROKER_VISIBILITY_TIMEOUT = env_int(
    "KINDMEM_BROKER_VISIBILITY_TIMEOUT", max(1800, CELERY_TASK_TIME_LIMIT + 600 + 60)
)
if BROKER_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT + 600:
    raise ImproperlyConfigured(
        "KINDMEM_BROKER_VISIBILITY_TIMEOUT must exceed KINDMEM_TASK_TIME_LIMIT + 600 s (the "
        "longest retry countdown), or a task still running is delivered twice"
    )
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    "visibility_timeout": BROKER_VISIBILITY_TIMEOUT
}
if is_embedded_url(CELERY_BROKER_URL):
    # one list per queue, taken atomically into an in-flight list (config/broker_transport.py)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(EMBEDDED_TRANSPORT_OPTIONS)
# If the broker connection drops, running acks-late tasks cannot be acknowledged on it any more
# and will be delivered again: stop them rather than run them twice at once (Celery 6's default).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# A publish (beat's, a worker's) that meets a dropped connection retries for ~4 s, long enough
# for the supervisor to restart the embedded broker, instead of failing.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 6,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 1,
}
# ...but a publish inside a request (api/background.py: starting an erasure or an export,
# queueing an embedding) does not wait that long. Its row has committed and a beat sweep resumes
# the work, so a broker that cannot be reached is logged and the request answers as usual; what
# matters is that it answers soon. Three attempts 0 s and 0.25 s apart: a refused connection or a
# missing socket costs ~0.3 s, a broker restarting under the supervisor still catches the
# third attempt if it is quick, and the sweep takes the rest.
REQUEST_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.25,
}
# A TCP broker whose packets are dropped (a firewall, a host gone) would hold each attempt for
# the operating system's connect timeout (minutes): 0.5 s per attempt, so the three attempts
# above stay within ~1.75 s. A Unix socket (the embedded broker) fails at once, without it.
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] = 0.5
# A worker or beat started before its broker waits for it (retried with backoff) instead of
# exiting: on a restart of the embedded broker, or when compose starts Redis late.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# JSON only: a message is data, never code (pickle would run whatever the broker holds).
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Tasks record their progress in the database; nothing reads Celery results.
CELERY_TASK_IGNORE_RESULT = True
# How often beat records a worker heartbeat, and the age past which /healthz calls background
# work degraded (a heartbeat is a task: its age covers beat, broker and worker together).
HEARTBEAT_INTERVAL_SECONDS = env_int("KINDMEM_HEARTBEAT_INTERVAL_SECONDS", 15)
HEARTBEAT_STALE_SECONDS = env_int("KINDMEM_HEARTBEAT_STALE_SECONDS", 60)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# how often the webhook sweep queues what is due (and how far ahead it looks)
WEBHOOK_SWEEP_SECONDS = env_int("KINDMEM_WEBHOOK_SWEEP_SECONDS", 15)
METRICS_REFRESH_SECONDS = env_int("KINDMEM_METRICS_REFRESH_SECONDS", 30)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "record-heartbeat": {
        "task": "kindmem.tasks.record_heartbeat",
        "schedule": float(HEARTBEAT_INTERVAL_SECONDS),
        # a heartbeat that waited longer than one interval says nothing any more: dropped
        "options": {"expires": float(HEARTBEAT_INTERVAL_SECONDS)},
    },
    # the embedder's and the chat model's servers, for /healthz (config/tasks.py)
    "probe-dependencies": {
        "task": "config.tasks.probe_dependencies",
        "schedule": float(HEARTBEAT_INTERVAL_SECONDS),
        "options": {"expires": float(HEARTBEAT_INTERVAL_SECONDS)},
    },
    "purge-audit-events": {"task": "audit.tasks.purge_audit_events", "schedule": 86400.0},
    "resume-erasures": {"task": "privacy.tasks.resume_erasures", "schedule": 30.0},
    "resume-access-exports": {"task": "privacy.tasks.resume_access_exports", "schedule": 60.0},
    # what the write path left unembedded and whose task was lost (or never sent)
    "embed-revision-backlog": {"task": "facts.tasks.embed_backlog", "schedule": 300.0},
    "embed-message-backlog": {"task": "recall.tasks.embed_backlog", "schedule": 300.0},
    "sweep-expired-facts": {"task": "facts.tasks.sweep_expired_facts", "schedule": 3600.0},
    "purge-facts": {"task": "facts.tasks.purge_facts", "schedule": 86400.0},
    "resume-extractions": {"task": "extraction.tasks.resume_extractions", "schedule": 60.0},
    # webhook deliveries whose message was lost or whose worker died (webhooks/tasks.py)
    "resume-webhooks": {
        "task": "webhooks.tasks.resume_webhooks",
        "schedule": float(WEBHOOK_SWEEP_SECONDS),
        "options": {"expires": float(WEBHOOK_SWEEP_SECONDS)},
    },
    # the state gauges of /metrics (config/metrics.py); a stale one is worth nothing
    "refresh-metrics": {
        "task": "config.tasks.refresh_metrics",
        "schedule": float(METRICS_REFRESH_SECONDS),
        "options": {"expires": float(METRICS_REFRESH_SECONDS)},
    },
}
