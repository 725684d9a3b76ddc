"""Tasks per second through a real worker process, for the brokers the one-machine default could
use: Kombu's filesystem transport and its SQLAlchemy transport on the embedded PostgreSQL.

    .venv/bin/pip install sqlalchemy   # only this benchmark needs it
    .venv/bin/python bench/broker_throughput.py [--tasks 200] [--repeat 3]

Prints, per transport, the seconds from the first enqueue until the worker has run all tasks,
the median over the repetitions, and the ratio between the two.
"""

from __future__ import annotations

import argparse
import os
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
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kindmem.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from kombu import Connection  # noqa: E402

from bench.broker_tasks import touch  # noqa: E402


def sqlalchemy_url() -> str:
    params = connection.get_connection_params()
    return (
        f"sqla+postgresql+psycopg://{params['user']}@/{params['dbname']}"
        f"?host={quote(str(params['host']))}"
    )


def one_run(transport: str, tasks: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        options: dict[str, object] = {}
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if transport == "filesystem":
            url = "filesystem://"
            env["KINDMEM_DATA_DIR"] = tmp
            (Path(tmp) / "broker" / "queue").mkdir(parents=True)
            # the worker's settings point its filesystem broker at <data dir>/broker/queue
            options = {
                "data_folder_in": str(Path(tmp) / "broker" / "queue"),
                "data_folder_out": str(Path(tmp) / "broker" / "queue"),
            }
        else:
            url = sqlalchemy_url()
        env["CELERY_BROKER_URL"] = url
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "kindmem",
                "worker",
                "--include",
                "bench.broker_tasks",
                "--pool",
                "solo",
                "--loglevel",
                "ERROR",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
            ],
            env=env,
            cwd=ROOT,
        )
        try:
            with Connection(url, transport_options=options) as broker:
                start = time.perf_counter()
                for i in range(tasks):
                    touch.apply_async(args=[str(out), str(i)], connection=broker)
                while len(list(out.iterdir())) < tasks:
                    if time.perf_counter() - start > 300:
                        raise TimeoutError(f"{transport}: not done in 300 s")
                    time.sleep(0.05)
                return time.perf_counter() - start
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    medians = {}
    for transport in ("filesystem", "sqlalchemy"):
        times = [one_run(transport, args.tasks) for _ in range(args.repeat)]
        medians[transport] = statistics.median(times)
        print(
            f"{transport:11} {args.tasks} tasks: median {medians[transport]:.2f} s "
            f"({args.tasks / medians[transport]:.1f} tasks/s) over {args.repeat} runs: "
            + ", ".join(f"{t:.2f}" for t in times)
        )
    print(f"filesystem is {medians['sqlalchemy'] / medians['filesystem']:.1f}x faster")


if __name__ == "__main__":
    main()
