"""One level of bench/load.py: its clients run through the warm-up and the measured window
while the database connections of each kind of process are sampled, and what the level
measured, as a result and as its printed lines."""

from __future__ import annotations

import argparse
import threading
import time
from collections import Counter
from typing import Any

from bench._timing import percentiles_ms
from bench.load_mix import OK, Call, LoadClient, Recorder

PROCESS_KINDS = ["kindmem-web", "kindmem-mcp", "kindmem-worker", "kindmem-beat"]
SAMPLER_NAME = "kindmem-bench-load"


class ConnectionSampler(threading.Thread):
    """The most database connections of each application_name seen during a level."""

    def __init__(self, params: dict[str, Any], *, label: str = "") -> None:
        super().__init__(daemon=True)
        import psycopg

        self.label = label  # "replica:" for a standby's connections
        self.conn = psycopg.connect(**params, application_name=SAMPLER_NAME, autocommit=True)
        self.max_connections = int(self.conn.execute("SHOW max_connections").fetchone()[0])
        self.stopping = threading.Event()
        self.peaks: Counter[str] = Counter()
        self.peak_total = 0

    def reset(self) -> None:
        self.peaks, self.peak_total = Counter(), 0

    def run(self) -> None:
        while not self.stopping.wait(0.1):
            rows = self.conn.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity "
                "WHERE datname = 'kindmem' GROUP BY 1"
            ).fetchall()
            counts = {
                self.label + (name or "(none)"): n for name, n in rows if name != SAMPLER_NAME
            }
            for name, n in counts.items():
                self.peaks[name] = max(self.peaks[name], n)
            self.peak_total = max(self.peak_total, sum(counts.values()))

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=5)
        self.conn.close()


def ms(samples: list[float]) -> dict[str, float | None]:
    if len(samples) < 2:
        only = round(samples[0] * 1000, 1) if samples else None
        return {"p50_ms": only, "p95_ms": only, "p99_ms": only}
    p = percentiles_ms(samples)
    return {f"p{k}_ms": round(v, 1) for k, v in p.items()}


def counts(calls: list[Call]) -> dict[str, int]:
    counter = Counter(str(c.status) for c in calls)
    return dict(sorted(counter.items(), key=lambda kv: (not kv[0].isdigit(), kv[0])))


def run_level(
    clients: int, args: argparse.Namespace, base: str, creds: dict[str, Any], samplers: list[Any]
) -> dict[str, Any]:
    start = time.monotonic()
    cpu_start = time.process_time()
    rec = Recorder(start=start + args.warmup, end=start + args.warmup + args.seconds)
    for each in samplers:
        each.reset()
    workers = [LoadClient(n, clients, base, creds, args.seed, rec) for n in range(clients)]
    threads = [threading.Thread(target=w.run, args=(rec.end,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, rec.end - time.monotonic()) + 180)
    calls = list(rec.calls)
    client_cpu = (time.process_time() - cpu_start) / max(time.monotonic() - start, 1e-9)
    seen: Counter[str] = Counter()
    for each in samplers:
        seen.update(each.peaks)
    peaks = {name: seen.get(name, 0) for name in PROCESS_KINDS}
    # under PgBouncer the server connections carry no application name: "(none)"
    others = {n: v for n, v in seen.items() if n not in PROCESS_KINDS}
    by_op: dict[str, Any] = {}
    for op in sorted({c.op for c in calls}):
        mine = [c for c in calls if c.op == op]
        by_op[op] = {
            "count": len(mine),
            "ok": sum(c.status in OK for c in mine),
            **ms([c.seconds for c in mine]),
            "by_status": counts(mine),
        }
    return {
        "clients": clients,
        "seconds": args.seconds,
        "requests": len(calls),
        "req_per_s": round(len(calls) / args.seconds, 1),
        **ms([c.seconds for c in calls]),
        "by_status": counts(calls),
        "by_surface": {
            s: {"count": len(mine), **ms([c.seconds for c in mine])}
            for s in ("rest", "mcp", "console")
            if (mine := [c for c in calls if c.surface == s])
        },
        "server_errors_500": sum(c.status in (500, "tool:persistence-error") for c in calls),
        "peak_connections": peaks,
        "peak_connections_other": others,
        "peak_connections_total": sum(each.peak_total for each in samplers),
        "by_op": by_op,
        "error_samples": {str(k): v for k, v in rec.samples.items()},
        # the cores the clients themselves used (this process), warm-up included: on a small
        # machine what they take is not the server's
        "client_cpu_cores": round(client_cpu, 2),
        "clients_stuck": sum(t.is_alive() for t in threads),
        "clients_without_run_token": sum(not w.token for w in workers),
    }


def level_line(r: dict[str, Any]) -> str:
    statuses = ", ".join(f"{k}: {v}" for k, v in r["by_status"].items())
    surfaces = ", ".join(f"{s}: {v['count']}" for s, v in r["by_surface"].items())
    peaks = ", ".join(
        f"{k.removeprefix('kindmem-')}: {v}" for k, v in r["peak_connections"].items()
    )
    return (
        f"clients {r['clients']:>4}: {r['req_per_s']:8.1f} req/s  "
        f"p50 {r['p50_ms']} / p95 {r['p95_ms']} / p99 {r['p99_ms']} ms  "
        f"status {{{statuses}}}  surface {{{surfaces}}}  500s {r['server_errors_500']}  "
        f"peak db connections {{{peaks}}} (total {r['peak_connections_total']})  "
        f"client cpu {r['client_cpu_cores']} cores"
    )


def not_ok_line(r: dict[str, Any]) -> str:
    bad = [
        f"{op} {v['count'] - v['ok']}/{v['count']}"
        for op, v in r["by_op"].items()
        if v["ok"] < v["count"]
    ]
    return "      not 2xx: " + ", ".join(bad) if bad else ""
