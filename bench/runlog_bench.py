"""Run log throughput: appends (one run; one run under contention; many runs in parallel) and
verification, in entries per second.

    .venv/bin/python bench/runlog_bench.py [--entries 600] [--threads 8] [--repeats 3]

It creates a throwaway database (`bench_runlog`) on the configured server and drops it after.
Figures are medians over the repeats; the machine is shared, so read them as orders of
magnitude and ratios, not constants.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection, connections  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=600, help="entries per measurement")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    connections["default"].settings_dict.setdefault("TEST", {})["NAME"] = "bench_runlog"
    old = setup_databases(verbosity=0, interactive=False)
    try:
        measure(args.entries, args.threads, args.repeats)
    finally:
        connections.close_all()
        teardown_databases(old, verbosity=0)


def measure(entries: int, threads: int, repeats: int) -> None:
    from runlog.services import log_append
    from runlog.verify import verify_run
    from tests import factories

    tenant = factories.tenant_create("bench")
    project = factories.project_create(tenant)
    factories.agent_create(tenant)
    app = factories.app_key_create(tenant, [project])

    def new_run() -> factories.Minted:
        return factories.run_create(app, project)

    def append_many(minted: factories.Minted, count: int) -> None:
        try:
            for n in range(count):
                log_append(
                    principal=minted.principal,
                    run=minted.run,
                    kind="turn",
                    payload={"role": "user", "n": n, "text": "the quick brown fox " * 10},
                )
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    def in_threads(targets: list[tuple[factories.Minted, int]]) -> float:
        pool = [threading.Thread(target=append_many, args=target) for target in targets]
        started = time.perf_counter()
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        return time.perf_counter() - started

    per_thread = max(1, entries // threads)
    figures: dict[str, list[float]] = {
        "append, one run, one writer": [],
        f"append, one run, {threads} writers": [],
        f"append, {threads} runs, {threads} writers": [],
        "verify": [],
    }
    for _ in range(repeats):
        run = new_run()
        started = time.perf_counter()
        append_many(run, entries)
        figures["append, one run, one writer"].append(entries / (time.perf_counter() - started))

        shared = new_run()
        elapsed = in_threads([(shared, per_thread)] * threads)
        figures[f"append, one run, {threads} writers"].append(per_thread * threads / elapsed)

        elapsed = in_threads([(new_run(), per_thread) for _ in range(threads)])
        figures[f"append, {threads} runs, {threads} writers"].append(per_thread * threads / elapsed)

        started = time.perf_counter()
        result = verify_run(run.run)
        figures["verify"].append(entries / (time.perf_counter() - started))
        assert result.ok
        assert result.length == entries
        assert verify_run(shared.run).ok

    print(f"run log, {entries} entries per measurement, median of {repeats}, {os.cpu_count()} CPUs")
    for name, values in figures.items():
        print(f"  {name:<32} {statistics.median(values):>9.0f} entries/s")


if __name__ == "__main__":
    main()
