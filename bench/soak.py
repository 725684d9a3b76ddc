"""Soak the one-command default as users drive it, and SIGKILL its worker along the way.

Starts `kindmem run` (the embedded PostgreSQL and broker, web, worker and beat under the
supervisor) on a data folder of its own, then runs N client threads for a while: each writes
facts with the demo admin key (`POST /v1/facts`) and, every third call, remembers through a run
token of the demo app (`POST /v1/runs` for a new run every 40 memories, `POST /v1/remember`).
Every write leaves its embedding to the worker (KINDMEM_EMBED_BUDGET_MS=0): one
`embed_revisions` task queued per revision. Every --kill-every seconds the worker's main
process is SIGKILLed; a probe fact written right after the kill measures the heal time (kill
until the restarted worker has embedded it). At the end the clients stop, the backlog drains,
and every revision written is looked up in the database.

Prints tasks queued (revisions written), tasks executed (the worker's "succeeded" lines: the
soak's, the demo's facts' and the probes', re-runs included) and run twice, lost (revisions
never embedded), web errors inside and outside the kill windows (a window is a kill until its
heal), each kill's heal time, and how `kindmem run` stopped.

    .venv/bin/python bench/soak.py [--duration 300] [--tasks N] [--clients 4] [--kill-every 60]
        [--fresh]

The hashing embedder stands in for the local model (the same tasks, a fraction of the CPU).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    revisions: list[str] = field(default_factory=list)
    calls: int = 0
    errors: list[tuple[float, str]] = field(default_factory=list)  # (time, what)
    latencies: list[float] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def call(base: str, path: str, *, token: str = "", body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(base + path, data=data)  # noqa: S310 - a local server
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except HTTPError as error:
        return error.code, error.read()[:200]
    except (URLError, OSError) as error:
        return 0, repr(error)


def client(
    n: int, base: str, creds: dict[str, str], tally: Tally, until: float, tasks: int
) -> None:
    """Write facts; every third call, remember through a run of this client's own."""
    run_token, memories = "", 0
    for i in itertools.count():
        if time.monotonic() >= until or len(tally.revisions) >= tasks:
            return
        start = time.monotonic()
        if i % 3 == 2:
            if not run_token or memories >= 40:
                status, body = call(
                    base,
                    "/v1/runs",
                    token=creds["app"],
                    body={
                        "agent_id": "support-bot",
                        "project_id": creds["project"],
                        "participant_id": f"soak-{n}-{i}",
                        "thread_id": f"soak-{n}-{i}",
                    },
                )
                if status != 201:
                    with tally.lock:
                        tally.errors.append((time.time(), f"runs {status} {body}"))
                    continue
                run_token, memories = body["token"], 0
            status, body = call(
                base,
                "/v1/remember",
                token=run_token,
                body={
                    "type": "preference",
                    "text": f"client {n} prefers tea number {i}",
                    "tool_call_id": uuid.uuid4().hex,
                },
            )
            memories += 1
            ok = status == 201
        else:
            status, body = call(
                base,
                "/v1/facts",
                token=creds["admin"],
                body={
                    "type": "note",
                    "content": f"soak client {n} note {i} {uuid.uuid4().hex[:8]}",
                    "scope": {"project_id": creds["project"]},
                },
            )
            ok = status == 201
        with tally.lock:
            tally.calls += 1
            tally.latencies.append(time.monotonic() - start)
            if ok:
                fact = body.get("fact", body)
                tally.revisions.append(fact["revision_id"])
            else:
                tally.errors.append((time.time(), f"{status} {str(body)[:120]}"))


def read_credentials(out: Any, deadline: float) -> dict[str, str]:
    creds: dict[str, str] = {}
    for raw in out:
        line = raw.decode(errors="replace")
        sys.stdout.write("  | " + line) if "kindmem run" in line else None
        if m := re.match(r"\s+project:\s+.*\(([0-9a-f-]{36})\)", line):
            creds["project"] = m.group(1)
        if m := re.match(r"\s+(admin|app)\s+(kmk_\S+)", line):
            creds[m.group(1)] = m.group(2)
        if len(creds) == 3 or time.monotonic() > deadline:
            return creds
    return creds


def supervisor_state(data_dir: Path) -> dict[str, Any]:
    return json.loads((data_dir / "supervisor.json").read_text())["children"]


def heal(base: str, creds: dict[str, str], data_dir: Path, killed_pid: int) -> float:
    """Kill the worker, then time until a fact written right after is embedded."""
    start = time.monotonic()
    os.kill(killed_pid, signal.SIGKILL)
    status, body = call(
        base,
        "/v1/facts",
        token=creds["admin"],
        body={"type": "note", "content": f"probe {uuid.uuid4().hex}"},
    )
    if status != 201:
        raise RuntimeError(f"the probe write failed: {status} {body}")
    while time.monotonic() - start < 300:
        status, fact = call(base, f"/v1/facts/{body['fact']['id']}", token=creds["admin"])
        if status == 200 and fact["embedding_state"] == "done":
            return time.monotonic() - start
        time.sleep(0.1)
    raise RuntimeError("the worker did not heal within 300 s")


def embedded_count(data_dir: Path, ids: list[str]) -> tuple[int, int]:
    """How many of `ids` exist, and how many of them are embedded (as the tables' owner)."""
    import psycopg

    from config.embedded_db import ensure_embedded_database

    params = ensure_embedded_database(data_dir)
    with psycopg.connect(**params) as conn:
        row = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE embedding_state = 'done') "
            "FROM facts_revision WHERE id = ANY(%s::uuid[])",
            [ids],
        ).fetchone()
    return row[0], row[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=300, help="seconds at most")
    parser.add_argument("--tasks", type=int, default=0, help="stop once this many are queued")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--kill-every", type=float, default=60)
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench" / "soak"))
    parser.add_argument("--fresh", action="store_true", help="start from an empty data folder")
    args = parser.parse_args()
    data_dir = Path(args.data_dir)
    if args.fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        KINDMEM_DATA_DIR=str(data_dir),
        KINDMEM_PORT=str(port),
        KINDMEM_EMBEDDER="hashing",
        KINDMEM_EMBED_BUDGET_MS="0",
        KINDMEM_WRITE_RATE="1000000/min",
        LOG_LEVEL="INFO",  # the worker logs every task: executions are counted from it
        PYTHONPATH=str(ROOT),
    )
    log_path = data_dir / "soak-run.log"
    log = log_path.open("wb")
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, "-m", "config.cli", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=ROOT,
    )
    assert run.stdout is not None
    creds = read_credentials(run.stdout, time.monotonic() + 600)
    # the rest of stdout goes to the log, so the pipe never fills
    threading.Thread(
        target=lambda: [log.write(chunk) for chunk in iter(lambda: run.stdout.read(4096), b"")],
        daemon=True,
    ).start()
    if len(creds) != 3:
        run.send_signal(signal.SIGINT)
        raise SystemExit(f"no credentials from `kindmem run` (see {log_path})")
    while call(base, "/healthz")[0] != 200:
        time.sleep(0.5)
    print(f"kindmem run up in {time.monotonic() - started:.1f} s on {base}", flush=True)

    tally = Tally()
    until = time.monotonic() + args.duration
    threads = [
        threading.Thread(
            target=client, args=(n, base, creds, tally, until, args.tasks or sys.maxsize)
        )
        for n in range(args.clients)
    ]
    soak_start = time.monotonic()
    for t in threads:
        t.start()
    windows: list[tuple[float, float]] = []
    heals: list[float] = []
    next_kill = soak_start + args.kill_every / 2
    while time.monotonic() < until and any(t.is_alive() for t in threads):
        if time.monotonic() >= next_kill:
            pid = supervisor_state(data_dir)["worker"]["pid"]
            killed_at = time.time()
            seconds = heal(base, creds, data_dir, pid)
            heals.append(seconds)
            windows.append((killed_at, killed_at + seconds))
            print(f"kill {len(heals)}: worker pid {pid} healed in {seconds:.2f} s", flush=True)
            next_kill += args.kill_every
        time.sleep(0.2)
    for t in threads:
        t.join()
    soak_seconds = time.monotonic() - soak_start
    revisions = list(tally.revisions)

    drain_start = time.monotonic()
    found, embedded = embedded_count(data_dir, revisions)
    while embedded < len(revisions) and time.monotonic() - drain_start < 300:
        time.sleep(2)
        found, embedded = embedded_count(data_dir, revisions)
    drain = time.monotonic() - drain_start

    health = call(base, "/healthz")[1]
    stop_start = time.monotonic()
    run.send_signal(signal.SIGINT)
    returncode = run.wait(timeout=120)
    stopped = time.monotonic() - stop_start
    log.close()
    text = log_path.read_text(errors="replace")
    succeeded = re.findall(r"Task facts\.tasks\.embed_revisions\[(\S+)\] succeeded", text)
    in_window = [e for e in tally.errors if any(a <= e[0] <= b for a, b in windows)]
    outside = [e for e in tally.errors if e not in in_window]
    lat = sorted(tally.latencies)
    print(
        json.dumps(
            {
                "clients": args.clients,
                "soak_seconds": round(soak_seconds, 1),
                "calls": tally.calls,
                "tasks_queued": len(revisions),
                # the demo's facts and the probes are executed too
                "tasks_executed": len(succeeded),
                "tasks_run_twice": len(succeeded) - len(set(succeeded)),
                "probes": len(heals),
                "revisions_found": found,
                "revisions_embedded": embedded,
                "lost": len(revisions) - embedded,
                "backlog_drained_seconds": round(drain, 1),
                "web_errors_in_kill_windows": len(in_window),
                "web_errors_outside": len(outside),
                "first_errors": [e[1] for e in tally.errors[:5]],
                "kills": len(heals),
                "heal_seconds": [round(h, 2) for h in heals],
                "heal_p50_seconds": round(statistics.median(heals), 2) if heals else None,
                "call_p50_ms": round(1000 * lat[len(lat) // 2], 1) if lat else None,
                "call_p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 1) if lat else None,
                "worker_restarts_logged": text.count("was killed by SIGKILL"),
                "health_at_end": health.get("status") if isinstance(health, dict) else None,
                "run_exit_code": returncode,
                "stop_seconds": round(stopped, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
