"""The Celery app the broker benchmark's workers run (bench/broker_throughput.py): no Django,
only the broker under test (BENCH_BROKER_URL, BENCH_TRANSPORT_OPTIONS as JSON) and kindmem's
delivery settings (config/settings_celery.py: acks late, reject on worker lost, prefetch 1,
JSON)."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from celery import Celery
from celery.signals import worker_init

# the `kindmem+socket` transport of the embedded broker; importing kindmem also loads its Celery
# app, whose start-up check (a durable database) and Django settings this app does without
import config.broker  # noqa: F401
from config.celery import refuse_a_database_that_is_not_durable

worker_init.disconnect(refuse_a_database_that_is_not_durable)
os.environ.pop("DJANGO_SETTINGS_MODULE", None)

if os.environ.get("BENCH_SQLA_POLLING_INTERVAL"):
    # the SQLAlchemy transport hands every transport option to create_engine(): set it here
    from kombu.transport import sqlalchemy

    sqlalchemy.Transport.polling_interval = float(os.environ["BENCH_SQLA_POLLING_INTERVAL"])

app = Celery("bench", broker=os.environ.get("BENCH_BROKER_URL", "memory://"))
app.conf.update(
    broker_transport_options=json.loads(os.environ.get("BENCH_TRANSPORT_OPTIONS", "{}")),
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_cancel_long_running_tasks_on_connection_loss=True,
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)


@app.task(name="bench.touch")
def touch(folder: str, name: str, sleep_ms: int = 0) -> None:
    """Mark one execution of task `name` (a file per execution, so a second run shows)."""
    if sleep_ms:
        time.sleep(sleep_ms / 1000)
    (Path(folder) / f"{name}.{uuid.uuid4().hex[:8]}").touch()
