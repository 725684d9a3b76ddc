"""Load the one-command default through every surface at once: REST, MCP and the console.

Starts `kindmem run` (the embedded PostgreSQL and broker, web under gunicorn, the MCP server
under uvicorn on the web port + 1, worker and beat under the supervisor) on a data folder of
its own, with the `--embedder` (default `local`, the model the figures are of; `hashing`
stands in for it at a fraction of the CPU) and the write throttle out of the way
(KINDMEM_WRITE_RATE=1000000/min). Then, for each level of `--levels` concurrent clients, runs
that many client threads for `--warmup` seconds (not counted) and `--seconds` more. Each
client has an `httpx.Client` of its own (connections kept alive), mints its own run token of
the demo app (`POST /v1/runs`, agent support-bot, a participant and thread of its own) and
calls, at random (a seeded RNG, `--seed`):

    60%  search    POST /v1/facts/search (hybrid, top 10) with the run token; a third of them
                   through MCP (`search_memories`)
    15%  write     half POST /v1/remember (a preference) with the run token, half
                   POST /v1/facts (a note in the project) with the admin key
    15%  read      half GET /v1/facts?limit=20 (a third through MCP `list_memories`), half
                   GET /v1/facts/{id} of a fact the client has seen
     5%  recall    POST /v1/recall (keyword, the agent's conversations), after appending
                   messages to its own conversation once
     5%  console   the demo admin's Django session (logged in once, CSRF and all): the front
                   page, then the review queue or the facts list

MCP calls are plain JSON-RPC `tools/call` POSTs to /mcp (stateless, JSON answers); one
counts by its HTTP status, or by its tool error code (`tool:<code>`) when the result is an
error. A thread samples pg_stat_activity every 0.1 s for the database connections of each
kind of process (kindmem-web, kindmem-mcp, kindmem-worker, kindmem-beat).

Prints, per level: clients, requests per second, p50/p95/p99 latency, counts by status and by
surface (rest, mcp, console), the 500s (and MCP `persistence-error` tool errors), and the peak
connections per process kind during the level (warm-up included); then a JSON summary of every
level, also written to bench/results/load-<timestamp>.json. `kindmem run` is stopped with
SIGINT at the end. Its stderr goes to <data-dir>/run.log, its stdout (gunicorn's access log)
to <data-dir>/access.log. The client threads share this process's cores with the server's:
on a small machine the figures are of both.

    .venv/bin/python bench/load.py [--levels 1,8,32,128] [--seconds 20] [--warmup 3]
        [--embedder local|hashing] [--seed 1] [--data-dir var/bench/load] [--fresh]
        [--topology one|pooled] [--pool-size 8]

`--topology pooled` runs the same processes against PgBouncer (transaction pooling, tests/
processes.py) in front of the embedded PostgreSQL, with a streaming standby for reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_level import level_line, not_ok_line, run_level  # noqa: E402
from bench.load_topology import kindmem_running  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,8,32,128", help="concurrent clients, per level")
    parser.add_argument("--seconds", type=float, default=20, help="measured, per level")
    parser.add_argument("--warmup", type=float, default=3, help="not counted, per level")
    parser.add_argument("--embedder", default="local", help="KINDMEM_EMBEDDER (hashing: cheap)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench" / "load"))
    parser.add_argument("--fresh", action="store_true", help="start from an empty data folder")
    parser.add_argument(
        "--topology",
        choices=["one", "pooled"],
        default="one",
        help="one: `kindmem run` as README starts it; pooled: its processes reach the embedded "
        "PostgreSQL through PgBouncer (transaction pooling) and read from a streaming replica",
    )
    parser.add_argument("--pool-size", type=int, default=8, help="PgBouncer's server pool (pooled)")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    data_dir = Path(args.data_dir).resolve()
    if args.fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    running = kindmem_running(
        data_dir, embedder=args.embedder, topology=args.topology, pool_size=args.pool_size
    )
    with running as up:
        summary = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "topology": args.topology,
            "pool_size": args.pool_size if args.topology == "pooled" else None,
            "embedder": args.embedder,
            "seconds": args.seconds,
            "warmup": args.warmup,
            "seed": args.seed,
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
            "max_connections": up.samplers[0].max_connections,
            "levels": [],
        }
        for clients in levels:
            result = run_level(clients, args, up.base, up.creds, up.samplers)
            summary["levels"].append(result)
            print(level_line(result), flush=True)
            if line := not_ok_line(result):
                print(line, flush=True)
            time.sleep(1)  # what is in flight settles before the next level
        summary["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    summary["run_exit_code"] = up.exit_code
    summary["stop_seconds"] = up.stop_seconds
    summary["run_log_tracebacks"] = up.tracebacks()
    print(json.dumps(summary, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"load-{stamp}.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written to {out.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main()
