"""Traces across the queue: a task queued inside a traced request runs, in a real worker process
exporting over OTLP/HTTP (to a real local collector stand-in), as a child of the span that
queued it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from api import tracing
from config.tracing import tracing_start, tracing_stop
from kindmem.models import WorkerHeartbeat
from kindmem.tasks import record_heartbeat
from tests.processes import Broker, database_env


@pytest.fixture
def collector() -> Iterator[tuple[str, list[Any]]]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps every span it is sent."""
    spans: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    spans.extend(scope.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing_start(exporter)
    try:
        yield exporter
    finally:
        tracing_stop()


def _start_worker(data_dir: Path, broker_url: str, endpoint: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **database_env(),
        "SECRET_KEY": "test-worker",
        "KINDMEM_DATA_DIR": str(data_dir),
        "CELERY_BROKER_URL": broker_url,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within 0.1 s of a span's end
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


@pytest.mark.django_db(transaction=True)
def test_a_task_runs_as_a_child_of_the_span_that_queued_it(
    tmp_path, worker_broker: Broker, collector, traced
):
    endpoint, received = collector
    worker = _start_worker(tmp_path, worker_broker.url, endpoint)
    token = uuid.uuid4().hex
    try:
        # when a traced request queues a task
        assert tracing._tracer is not None
        with tracing._tracer.start_as_current_span("a request"):
            record_heartbeat.apply_async(args=[token], connection=worker_broker.connection)
        queued = next(s for s in traced.get_finished_spans() if s.name.startswith("apply_async/"))
        # then the worker runs it, and exports its span within that trace, under the publish
        deadline = time.monotonic() + 60
        while not [s for s in received if s.name == "run/kindmem.tasks.record_heartbeat"]:
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            assert worker.poll() is None
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert WorkerHeartbeat.objects.filter(token=token).exists()
    run = next(s for s in received if s.name == "run/kindmem.tasks.record_heartbeat")
    assert run.trace_id == queued.context.trace_id.to_bytes(16, "big")
    assert run.parent_span_id == queued.context.span_id.to_bytes(8, "big")
    # and its SQL is traced in the worker too, statements without their values
    sql = [s for s in received if s.trace_id == run.trace_id and s.name != run.name]
    assert sql
    assert not [a for s in sql for a in s.attributes if token in a.value.string_value]
