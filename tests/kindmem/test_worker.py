"""A real Celery worker process round-trip, on the embedded default broker and on Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kombu import Connection

from kindmem.models import WorkerHeartbeat
from kindmem.tasks import record_heartbeat
from tests.processes import database_env, redis_or_skip

REDIS_URL = os.environ.get("KINDMEM_TEST_REDIS_URL", "")


def _start_worker(data_dir: Path, broker_url: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **database_env(),
        "SECRET_KEY": "test-worker",
        "KINDMEM_DATA_DIR": str(data_dir),
        "CELERY_BROKER_URL": broker_url,
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _round_trip(broker: Connection, worker: subprocess.Popen[bytes]) -> None:
    token = uuid.uuid4().hex
    try:
        record_heartbeat.apply_async(args=[token], connection=broker)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if WorkerHeartbeat.objects.filter(token=token).exists():
                return
            assert worker.poll() is None, worker.stderr.read().decode() if worker.stderr else ""
            time.sleep(0.2)
        pytest.fail("the worker did not run the task within 60 s")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_task_from_the_embedded_broker(tmp_path, worker_broker):
    worker = _start_worker(tmp_path, worker_broker.url)
    _round_trip(worker_broker.connection, worker)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_task_from_redis(tmp_path):
    redis_or_skip(REDIS_URL)
    worker = _start_worker(tmp_path, REDIS_URL)
    _round_trip(Connection(REDIS_URL), worker)
