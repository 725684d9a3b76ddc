"""`kindmem run` under a worker's death: the web keeps answering, the worker comes back, and the
work queued meanwhile runs (a real `kindmem run` process); and the supervisor's backoff."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

import pytest

from config import broker
from config.supervisor import FIRST_BACKOFF_SECONDS, Child, Supervisor, describe_exit
from facts.models import EmbeddingState, Revision
from tests import factories
from tests.processes import database_env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _call(url: str, *, token: str = "", body: dict[str, Any] | None = None) -> tuple[int, Any]:
    request = Request(url, data=json.dumps(body).encode() if body is not None else None)  # noqa: S310
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urlopen(request, timeout=10) as response:  # noqa: S310 - a local test server
            return response.status, json.loads(response.read())
    except HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _wait(what: str, check: Any, *, seconds: float, run: subprocess.Popen[bytes]) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert run.poll() is None, f"kindmem run exited ({run.returncode}) waiting for {what}"
        try:
            value = check()
        except (OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {seconds:.0f} s")


def _state(data_dir: Path) -> dict[str, Any]:
    return json.loads((data_dir / "supervisor.json").read_text())["children"]


@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_comes_back_and_runs_what_was_queued_meanwhile(tmp_path):
    # given `kindmem run` on the test database, with its embedded broker, every write's
    # embedding left to the worker
    tenant = factories.tenant_create()
    admin = factories.admin_key_create(tenant)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        **database_env(),
        "KINDMEM_DATABASE_LOGIN": "migration",  # `run` migrates; its children log in as app
        "SECRET_KEY": "test-supervisor",
        "KINDMEM_DATA_DIR": str(tmp_path),
        "KINDMEM_EMBEDDER": "hashing",
        "KINDMEM_EMBED_BUDGET_MS": "0",
        "KINDMEM_HEARTBEAT_INTERVAL_SECONDS": "2",
    }
    env.pop("CELERY_BROKER_URL", None)
    log = (tmp_path / "run.log").open("wb")
    run = subprocess.Popen(
        [sys.executable, "-m", "config.cli", "run", "--no-demo", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait("healthz", lambda: _call(f"{base}/healthz")[0] == 200, seconds=120, run=run)
        first = _wait(
            "a heartbeat",
            lambda: _call(f"{base}/healthz")[1]["checks"]["background"]["ok"],
            seconds=60,
            run=run,
        )
        assert first
        worker_pid = _state(tmp_path)["worker"]["pid"]

        # when the worker is SIGKILLed
        os.kill(worker_pid, signal.SIGKILL)

        # then the web keeps answering: a write queues its embedding while no worker runs
        status, written = _call(
            f"{base}/v1/facts",
            token=admin.token,
            body={"type": "note", "content": "written while the worker was dead"},
        )
        assert status == 201, written
        fact = written["fact"]
        assert fact["embedding_state"] == EmbeddingState.PENDING
        status, health = _call(f"{base}/healthz")
        assert status == 200
        assert health["ok"] is True
        # and the worker comes back, as a new process, the death logged
        _wait(
            "the worker's restart",
            lambda: (w := _state(tmp_path)["worker"])["running"] and w["pid"] != worker_pid,
            seconds=60,
            run=run,
        )
        worker = _state(tmp_path)["worker"]
        assert worker["restarts"] == 1
        assert worker["last_exit"] == "was killed by SIGKILL"
        # and the task queued meanwhile runs
        _wait(
            "the revision's embedding",
            lambda: Revision.objects.filter(
                pk=fact["revision_id"], embedding_state=EmbeddingState.DONE
            ).exists(),
            seconds=60,
            run=run,
        )
        children = _state(tmp_path)
    finally:
        # when Ctrl-C
        run.send_signal(signal.SIGINT)
        returncode = run.wait(timeout=60)
        log.close()
    # then everything stops cleanly: no child is left, the broker's socket is gone
    output = (tmp_path / "run.log").read_text()
    assert returncode == 0, output[-3000:]
    assert f"worker (pid {worker_pid}) was killed by SIGKILL" in output
    for child in children.values():
        with pytest.raises(ProcessLookupError):
            os.kill(child["pid"], 0)
    assert not broker.answers(broker.embedded_broker_url(tmp_path))


def test_a_child_that_keeps_dying_is_restarted_with_growing_backoff():
    # given a child that exits at once, every time
    child = Child(
        name="beat",
        start=lambda: subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"]),
    )
    supervisor = Supervisor(children=[child])
    supervisor.start_all()
    delays = []
    # when it has died three times
    while len(delays) < 3:
        child.process.wait()
        supervisor.tick()
        assert child.restart_at is not None
        delays.append(child.restart_at - time.monotonic())
        time.sleep(child.restart_at - time.monotonic() + 0.01)
        supervisor.tick()
    supervisor.stop_all()
    # then each wait was twice the one before, and why it died is kept
    assert delays[0] == pytest.approx(FIRST_BACKOFF_SECONDS, abs=0.1)
    assert delays[1] == pytest.approx(2 * FIRST_BACKOFF_SECONDS, abs=0.1)
    assert delays[2] == pytest.approx(4 * FIRST_BACKOFF_SECONDS, abs=0.1)
    assert child.restarts == 3
    assert child.last_exit == "exited with status 3"


def test_an_exit_is_described_by_its_signal_or_status():
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(1) == "exited with status 1"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stop", ["SIGTERM to make", "SIGINT to its process group"])
def test_make_run_stops_everything_when_make_is_signalled(tmp_path, stop):
    # given README's `make run` (its recipe as written, the install step taken as done), in a
    # process group of its own as a shell would start it
    port = _free_port()
    env = {
        **os.environ,
        **database_env(),
        "KINDMEM_DATABASE_LOGIN": "migration",
        "SECRET_KEY": "test-make-run",
        "KINDMEM_DATA_DIR": str(tmp_path),
        "KINDMEM_EMBEDDER": "hashing",
        "KINDMEM_PORT": str(port),
    }
    env.pop("CELERY_BROKER_URL", None)
    venv = Path(sys.prefix)
    repo = Path(__file__).resolve().parents[2]
    log = (tmp_path / "run.log").open("wb")
    make = subprocess.Popen(
        ["make", "-s", f"VENV={venv}", "-o", f"{venv}/.installed-run", "run", "RUN_ARGS=--no-demo"],
        cwd=repo,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait(
            "healthz",
            lambda: _call(f"http://127.0.0.1:{port}/healthz")[0] == 200,
            seconds=120,
            run=make,
        )
        children = _state(tmp_path)
        assert {"web", "worker", "beat"} <= set(children)

        # when make is signalled as an operator would from another shell, or as Ctrl-C does
        if stop == "SIGTERM to make":
            os.kill(make.pid, signal.SIGTERM)
        else:
            os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=60)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
        log.close()

    # then make is gone, and so is every process kindmem run started
    output = (tmp_path / "run.log").read_text()
    assert "stopping: web, beat, worker, broker" in output, output[-3000:]
    for child in children.values():
        with pytest.raises(ProcessLookupError):
            os.kill(child["pid"], 0)
    with pytest.raises(URLError):
        _call(f"http://127.0.0.1:{port}/healthz")
