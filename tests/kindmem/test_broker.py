"""The embedded broker (config/broker.py): what a dead worker or a crashed broker held comes
back, never lost."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import redis

from config import broker
from config.broker_transport import INFLIGHT_KEY
from kindmem.tasks import record_heartbeat


def _client(data_dir) -> redis.Redis:
    return redis.Redis(unix_socket_path=str(broker.socket_path(data_dir)))


def test_a_message_taken_but_not_yet_recorded_is_put_back(tmp_path, worker_broker):
    # given a message a worker took (BLMOVE into the in-flight list) and died before recording
    record_heartbeat.apply_async(args=["t1"], connection=worker_broker.connection)
    client = _client(tmp_path)
    assert client.lmove("celery", INFLIGHT_KEY, "RIGHT", "LEFT") is not None
    assert client.llen("celery") == 0
    # when the supervisor puts the dead worker's messages back
    restored = broker.broker_restore_unacked(worker_broker.url)
    # then it is in the queue again, once
    assert restored == 1
    assert client.llen("celery") == 1
    assert client.llen(INFLIGHT_KEY) == 0


def test_a_message_unacknowledged_by_a_killed_consumer_is_put_back(tmp_path, worker_broker):
    # given a consumer that took a message (recorded as unacked) and was killed before its ack
    record_heartbeat.apply_async(args=["t2"], connection=worker_broker.connection)
    consumer = textwrap.dedent(
        f"""
        import os
        from kombu import Connection
        import config.broker
        with Connection({worker_broker.url!r}) as conn:
            message = conn.SimpleQueue("celery").get(timeout=10)
            os.kill(os.getpid(), 9)
        """
    )
    died = subprocess.run([sys.executable, "-c", consumer], check=False, timeout=60)
    assert died.returncode == -signal.SIGKILL
    client = _client(tmp_path)
    assert client.llen("celery") == 0
    assert client.hlen("unacked") == 1
    # when the supervisor puts the dead worker's messages back
    assert broker.broker_restore_unacked(worker_broker.url) == 1
    # then it is in the queue again
    assert client.llen("celery") == 1
    assert client.hlen("unacked") == 0


def test_a_queued_message_survives_a_crash_of_the_broker(tmp_path, worker_broker):
    # given a published message
    record_heartbeat.apply_async(args=["t3"], connection=worker_broker.connection)
    # when the broker is SIGKILLed and started again on the same folder
    worker_broker.process.kill()
    worker_broker.process.wait()
    worker_broker.process = broker.broker_start(data_dir=tmp_path)
    # then the message is there (the append-only file was written before publish returned)
    assert _client(tmp_path).llen("celery") == 1
