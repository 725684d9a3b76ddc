"""The brokers the one-machine default could use, side by side, through real worker processes
(prefork, concurrency 2, kindmem's delivery settings: bench/broker_app.py):

- `filesystem`: Kombu's filesystem transport (the old default), polling every 0.1 s;
- `sqlalchemy`: Kombu's SQLAlchemy transport on the embedded PostgreSQL (its own database),
  polling every 0.1 s;
- `valkey-brpop`: the embedded Valkey of config/broker.py (Unix socket, AOF fsynced per
  write) through Kombu's own Redis transport, which takes a message with BRPOP;
- `valkey`: the same server through config/broker_transport.py, which takes it with BLMOVE
  into an in-flight list (what `kindmem run` uses);
- `valkey-everysec`: that, with the AOF fsynced once a second.

For each: throughput (queue N tasks as fast as one client can, until the worker has run them
all), latency (one task at a time, queued to done, p50/p95), and a kill test (queue K tasks of
BENCH_KILL_TASK_MS (100) ms, SIGKILL the worker's whole process group a third of the way in,
at a random point of a task's run, start a new worker, and count the tasks never run and those
run twice, over several rounds; for the valkey ones the new worker starts after
`broker_restore_unacked`, as under `kindmem run`).

    .venv/bin/pip install sqlalchemy   # only this benchmark needs it
    .venv/bin/python bench/broker_throughput.py [--tasks 1000] [--latency 100] [--kill 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kombu import Connection  # noqa: E402

from bench.broker_app import touch  # noqa: E402
from config import broker  # noqa: E402
from config.embedded_db import embedded_data_dir, ensure_embedded_database  # noqa: E402

KILL_TASK_MS = int(os.environ.get("BENCH_KILL_TASK_MS", "100"))
TRANSPORTS = ("filesystem", "sqlalchemy", "valkey-brpop", "valkey", "valkey-everysec")


class Candidate:
    """One broker, started under `tmp` (the database one in the embedded PostgreSQL)."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.options: dict[str, object] = {}
        self.server: subprocess.Popen[bytes] | None = None
        if name == "filesystem":
            folder = tmp / "queue"
            folder.mkdir()
            self.url = "filesystem://"
            self.options = {
                "data_folder_in": str(folder),
                "data_folder_out": str(folder),
                "control_folder": str(tmp / "control"),  # else ./control, in the checkout
                "polling_interval": 0.1,
            }
        elif name == "sqlalchemy":
            params = ensure_embedded_database(embedded_data_dir(), database="kindmem_broker_bench")
            with Connection(self._sqla_url(params)) as c:  # empty the tables of an earlier run
                c.default_channel.queue_purge("celery")
            self.url = self._sqla_url(params)
        else:
            argv = broker.server_argv(tmp)
            if name == "valkey-everysec":
                argv[argv.index("always")] = "everysec"
            (tmp / "broker").mkdir()
            self.server = subprocess.Popen(argv)
            self.url = broker.embedded_broker_url(tmp)
            self.options = dict(broker.TRANSPORT_OPTIONS)
            if name == "valkey-brpop":  # Kombu's own Redis transport on the same server
                self.url = self.url.replace(broker.SCHEME, "redis+socket://")
                self.options = {}
            while not broker.answers(self.url):
                time.sleep(0.05)

    @staticmethod
    def _sqla_url(params: dict[str, str]) -> str:
        return (
            f"sqla+postgresql+psycopg://{params['user']}@/{params['dbname']}"
            f"?host={quote(params['host'])}"
        )

    def connection(self) -> Connection:
        return Connection(self.url, transport_options=self.options)

    def worker(self) -> subprocess.Popen[bytes]:
        # no DJANGO_SETTINGS_MODULE (kindmem's import set it): Celery would set up Django
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env = {
            **env,
            "PYTHONPATH": str(ROOT),
            "BENCH_BROKER_URL": self.url,
            "BENCH_TRANSPORT_OPTIONS": json.dumps(self.options),
            "BENCH_SQLA_POLLING_INTERVAL": "0.1",
        }
        argv = [sys.executable, "-m", "celery", "-A", "bench.broker_app", "worker"]
        argv += ["--concurrency", "2", "--loglevel", "ERROR"]
        argv += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
        log = (self.tmp / "worker.log").open("ab")
        return subprocess.Popen(
            argv, env=env, cwd=self.tmp, start_new_session=True, stdout=log, stderr=log
        )

    def after_kill(self) -> None:
        if self.name.startswith("valkey"):
            broker.broker_restore_unacked(self.url)

    def close(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait()


def names_done(out: Path) -> tuple[set[str], int]:
    """Distinct task names run, and executions in all."""
    files = [p.name for p in out.iterdir()]
    return {f.split(".")[0] for f in files}, len(files)


def stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def throughput(c: Candidate, tasks: int) -> str:
    out = c.tmp / "throughput"
    out.mkdir()
    worker = c.worker()
    try:
        with c.connection() as conn:
            start = time.perf_counter()
            for i in range(tasks):
                touch.apply_async(args=[str(out), str(i)], connection=conn)
            queued = time.perf_counter() - start
            while len(names_done(out)[0]) < tasks:
                if worker.poll() is not None:
                    return f"worker died ({worker.returncode}) after {len(names_done(out)[0])}"
                if time.perf_counter() - start > 300:
                    return f"not done in 300 s ({len(names_done(out)[0])} of {tasks})"
                time.sleep(0.02)
            total = time.perf_counter() - start
        return f"{tasks / total:.0f} tasks/s ({tasks} in {total:.1f} s; queueing {queued:.1f} s)"
    finally:
        stop(worker)


def latency(c: Candidate, samples: int) -> str:
    out = c.tmp / "latency"
    out.mkdir()
    worker = c.worker()
    times = []
    try:
        with c.connection() as conn:
            touch.apply_async(args=[str(out), "warm"], connection=conn)
            while not any(out.iterdir()):
                time.sleep(0.01)
            for i in range(samples):
                start = time.perf_counter()
                touch.apply_async(args=[str(out), str(i)], connection=conn)
                while not any(p.name.startswith(f"{i}.") for p in out.iterdir()):
                    if time.perf_counter() - start > 30 or worker.poll() is not None:
                        return f"stuck at sample {i} (worker {worker.poll()})"
                    time.sleep(0.002)
                times.append((time.perf_counter() - start) * 1000)
        q = statistics.quantiles(times, n=20)
        return f"p50 {statistics.median(times):.1f} ms, p95 {q[18]:.1f} ms"
    finally:
        stop(worker)


def kill(c: Candidate, tasks: int) -> str:
    out = c.tmp / "kill"
    out.mkdir()
    worker = c.worker()
    with c.connection() as conn:
        for i in range(tasks):
            touch.apply_async(
                args=[str(out), str(i)], kwargs={"sleep_ms": KILL_TASK_MS}, connection=conn
            )
    start = time.perf_counter()
    while len(names_done(out)[0]) < tasks // 3:
        if worker.poll() is not None or time.perf_counter() - start > 300:
            return f"worker died or stalled before the kill ({worker.poll()})"
        time.sleep(0.005)
    # not right after a task finished (when the worker holds least): anywhere in a task's run
    time.sleep(random.uniform(0, KILL_TASK_MS / 1000))
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    at_kill = len(names_done(out)[0])
    c.after_kill()
    worker = c.worker()
    try:
        last, still = -1, time.perf_counter()
        while time.perf_counter() - still < 5:  # until nothing new for 5 s
            done = names_done(out)[1]
            if done != last:
                last, still = done, time.perf_counter()
            if len(names_done(out)[0]) == tasks and time.perf_counter() - still > 3:
                break
            time.sleep(0.1)
        names, executions = names_done(out)
        return (
            f"killed at {at_kill}/{tasks}: lost {tasks - len(names)}, "
            f"run twice {executions - len(names)}"
        )
    finally:
        stop(worker)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--latency", type=int, default=100)
    parser.add_argument("--kill", type=int, default=300)
    parser.add_argument("--kill-rounds", type=int, default=3)
    parser.add_argument("--only", choices=TRANSPORTS, action="append")
    args = parser.parse_args()
    for name in args.only or TRANSPORTS:
        measures = [(throughput, args.tasks), (latency, args.latency)]
        measures += [(kill, args.kill)] * args.kill_rounds
        for measure, n in measures:
            if not n:
                continue
            with tempfile.TemporaryDirectory(prefix="kmbroker-") as tmp:
                candidate = Candidate(name, Path(tmp))
                try:
                    result = measure(candidate, n)
                finally:
                    candidate.close()
                log = Path(tmp) / "worker.log"
                errors = [
                    line.strip()
                    for line in log.read_text(errors="replace").splitlines()
                    if "Unrecoverable error" in line
                ]
                if errors:  # why a worker died, e.g. a message file read half-written
                    result += f" [{errors[-1][:160]}]"
            print(f"{name:16} {measure.__name__:10} {result}", flush=True)


if __name__ == "__main__":
    main()
