"""Webhooks delivered by a real Celery worker process: at least once when the worker is killed
(SIGKILL) in the middle of a POST, and a slow receiver does not hold up another's deliveries."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook

from config.celery import app
from facts import services as facts_services
from tests.processes import Broker, database_env
from tests.webhooks.receiver import Answer, receiver_running
from webhooks.models import Delivery, DeliveryStatus

TIMEOUT = 1.0  # the worker's WEBHOOK_TIMEOUT_SECONDS: its lease is 3 * 1 + 5 s


def _start_worker(data_dir: Path, broker_url: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **database_env(),
        "SECRET_KEY": "test-worker",
        "KINDMEM_DATA_DIR": str(data_dir),
        "CELERY_BROKER_URL": broker_url,
        "KINDMEM_EMBEDDER": "none",
        "KINDMEM_WEBHOOKS_ALLOW_PRIVATE_URLS": "1",
        "KINDMEM_WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT),
        "KINDMEM_WEBHOOK_BACKOFF_SECONDS": "0.2",
    }
    return subprocess.Popen(
        [
            sys.executable,
            *("-m", "celery", "-A", "config", "worker", "--pool", "solo", "--loglevel", "INFO"),
            *("--without-mingle", "--without-gossip", "--without-heartbeat"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(data_dir / "worker.log").open("ab"),
    )


@pytest.fixture
def queued_to(worker_broker: Broker) -> Iterator[Broker]:
    """What this process queues when a transaction commits goes to the worker's broker."""
    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url = worker_broker.url
    app._pool = app.amqp._producer_pool = None
    try:
        yield worker_broker
    finally:
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


def register(api: Any, world: Any, url: str, settings: Any) -> str:
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    answer = api.post(
        "/v1/webhooks",
        {"url": url, "events": ["fact.changed"]},
        format="json",
        **world.admin.headers,
    )
    assert answer.status_code == 201, answer.json()
    return str(answer.json()["secret"])


def write_fact(world: Any, content: str) -> Any:
    return facts_services.fact_create(
        principal=world.app.principal,
        type="note",
        content=content,
        scope={"project_id": str(world.project.id), "participant_id": "p-worker"},
    ).revision


def _stop(worker: subprocess.Popen[bytes], how: int = signal.SIGTERM) -> None:
    worker.send_signal(how)
    worker.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_a_delivery_arrives_at_least_once_when_the_worker_is_killed_mid_post(
    api, world, tmp_path, queued_to, settings
):
    with receiver_running() as receiver:
        # given a receiver that holds the first POST open, and a worker sending to it
        receiver.script = [Answer(delay_seconds=30)]
        secret = register(api, world, receiver.url, settings)
        worker = _start_worker(tmp_path, queued_to.url)
        try:
            write_fact(world, "likes tea")
            assert receiver.arrived.wait(60), (tmp_path / "worker.log").read_text()[-3000:]
        finally:
            # when the worker is killed while the receiver has the POST
            _stop(worker, signal.SIGKILL)
        assert Delivery.objects.get().status == DeliveryStatus.PENDING
        # then a new worker sends it again once the dead one's claim has run out
        worker = _start_worker(tmp_path, queued_to.url)
        try:
            deadline = time.monotonic() + 60
            while Delivery.objects.get().status != DeliveryStatus.DELIVERED:
                assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
                assert worker.poll() is None
                time.sleep(0.1)
        finally:
            _stop(worker)
        first, second = receiver.received[:2]
    # with the same webhook-id (the receiver's key to deduplicate), both signed
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert Webhook(secret).verify(second.body, second.headers)["type"] == "fact.changed"
    assert Delivery.objects.get().attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_slow_receiver_does_not_hold_up_another_receivers_deliveries(
    api, world, tmp_path, queued_to, settings
):
    with receiver_running() as slow, receiver_running() as fast:
        # given one receiver that never answers in time, and one that does
        slow.script = [Answer(delay_seconds=30)] * 5
        register(api, world, slow.url, settings)
        register(api, world, fast.url, settings)
        worker = _start_worker(tmp_path, queued_to.url)
        try:
            # when three facts are written, each for both
            for n in range(3):
                write_fact(world, f"likes tea {n}")
            # then the fast receiver has all three while the slow one's are still retried
            fast.wait_for(3, seconds=30)
            assert Delivery.objects.filter(
                endpoint__url=slow.url, status=DeliveryStatus.PENDING
            ).exists()
            assert worker.poll() is None
        finally:
            _stop(worker)
    timed_out = Delivery.objects.filter(endpoint__url=slow.url, attempts__gte=1).first()
    assert timed_out is not None
    assert timed_out.last_error == "timed out"
