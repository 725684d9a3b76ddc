"""The Celery app: tasks autodiscovered per app, JSON only, acks late, settings from Django."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import (
    task_failure,
    task_retry,
    task_success,
    worker_init,
    worker_process_init,
    worker_ready,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("kindmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_a_database_that_is_not_durable(**_: object) -> None:
    from config.durability import assert_confined_login, assert_durable_database

    assert_durable_database()
    assert_confined_login()


@worker_process_init.connect
@worker_ready.connect
def start_tracing(**_: object) -> None:
    """Traces (config/tracing.py), when OTEL_EXPORTER_OTLP_ENDPOINT is set: in each process
    that runs tasks (a prefork child, after its fork: the exporter's thread does not survive
    one; or a solo worker itself). Once per process."""
    from config.tracing import tracing_start

    tracing_start()


@worker_ready.connect
def queue_a_heartbeat(**_: object) -> None:
    """A first heartbeat as soon as the worker takes tasks, through the broker like beat's: a
    fresh or restarted worker shows in /healthz at once, not one beat interval later."""
    from kindmem.tasks import record_heartbeat

    record_heartbeat.delay()


def _count_task(outcome: str) -> object:
    def count(sender: object = None, **_: object) -> None:
        from django.conf import settings

        from config.metrics import TASKS

        if not settings.METRICS:
            return

        TASKS.labels(getattr(sender, "name", "unknown"), outcome).inc()

    return count


# Task outcomes by task for /metrics (config/metrics.py): counting, not domain behaviour.
# weak=False: the receivers are closures that nothing else holds.
for _signal, _outcome in (
    (task_success, "success"),
    (task_failure, "failure"),
    (task_retry, "retry"),
):
    _signal.connect(_count_task(_outcome), weak=False)
