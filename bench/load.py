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
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentiles_ms  # noqa: E402

AGENT = "support-bot"
QUERIES = [
    "dark mode",
    "mobile app",
    "refund",
    "refunds within 30 days",
    "language",
    "portuguese answers",
    "billing plan",
    "pro plan yearly",
    "tea",
    "coffee",
    "green tea in the morning",
    "parcel never arrived",
    "shipping delay",
    "support ticket",
    "note",
]
DRINKS = ["tea", "coffee", "green tea", "hot chocolate", "sparkling water", "lemonade"]
# two pages a reviewer opens (bench/console_pages.py): the review queue and the facts list
CONSOLE_PAGES = ["/console/approvals/approval/", "/console/facts/fact/"]
PROCESS_KINDS = ["kindmem-web", "kindmem-mcp", "kindmem-worker", "kindmem-beat"]
SAMPLER_NAME = "kindmem-bench-load"
OK = {200, 201, 302}


@dataclass
class Call:
    surface: str  # rest, mcp or console
    op: str
    status: int | str  # the HTTP status, `tool:<code>` for an MCP tool error, `exc:<name>`
    seconds: float


@dataclass
class Recorder:
    """The calls of one level that ended inside its measured window."""

    start: float
    end: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[Call] = field(default_factory=list)
    samples: dict[int | str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, call: Call, ended: float, sample: str = "") -> None:
        if not self.start <= ended <= self.end:
            return
        with self.lock:
            self.calls.append(call)
            if call.status not in OK and len(self.samples[call.status]) < 3:
                self.samples[call.status].append(f"{call.op}: {sample[:200]}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_credentials(out: Any, deadline: float) -> dict[str, Any]:
    """What `kindmem run` prints (config/management/commands/seed_demo.py format_credentials),
    up to its "MCP server:" line: the project, the console passwords, the API keys."""
    creds: dict[str, Any] = {"passwords": {}, "keys": {}}
    section = ""
    for raw in out:
        line = raw.decode(errors="replace")
        sys.stdout.write("  | " + line) if "kindmem" in line else None
        if m := re.match(r"\s+project:\s+.*\(([0-9a-f-]{36})\)", line):
            creds["project"] = m.group(1)
        elif "console logins" in line:
            section = "passwords"
        elif "API keys" in line:
            section = "keys"
        elif section and (m := re.match(r" {4}(\w+)\s+(\S+)\s*$", line)):
            creds[section][m.group(1)] = m.group(2)
        elif m := re.match(r"MCP server:\s+(http://\S+/mcp)", line):
            creds["mcp"] = m.group(1)
            return creds
        if time.monotonic() > deadline:
            return creds
    return creds


def credentials_complete(creds: dict[str, Any]) -> bool:
    return (
        "project" in creds
        and "mcp" in creds
        and {"admin", "app"} <= creds["keys"].keys()
        and "admin" in creds["passwords"]
    )


class LoadClient:
    """One client thread: its own HTTP client, run token, conversation and console session."""

    def __init__(
        self, n: int, level: int, base: str, creds: dict[str, Any], seed: int, rec: Recorder
    ) -> None:
        self.n, self.base, self.creds, self.rec = n, base, creds, rec
        self.rng = random.Random(f"{seed}-{level}-{n}")
        self.participant = f"load-{level}-{n}"
        self.thread = f"load-{level}-{n}-{uuid.uuid4().hex[:8]}"
        self.http = httpx.Client(base_url=base, timeout=120)
        # the console's cookies in a jar of their own (a cookie names a host, not a port)
        self.console = httpx.Client(base_url=base, timeout=120)
        self.token = ""
        self.seen: list[str] = []
        self.appended = False
        self.logged_in = False
        self.rpc_id = 0
        self.i = 0

    # ---- one request, timed and recorded ------------------------------------------------------

    def rest(
        self, op: str, method: str, path: str, *, token: str = "", body: Any = None
    ) -> tuple[int | str, Any]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        started = time.monotonic()
        try:
            response = self.http.request(method, path, headers=headers, json=body)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            status: int | str = f"exc:{type(error).__name__}"
            self.rec.add(Call("rest", op, status, ended - started), ended, repr(error))
            return status, None
        ended = time.monotonic()
        self.rec.add(Call("rest", op, response.status_code, ended - started), ended, response.text)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return response.status_code, answer

    def mcp(self, op: str, tool: str, arguments: dict[str, Any]) -> tuple[int | str, Any]:
        self.rpc_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.rpc_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
        }
        started = time.monotonic()
        try:
            response = self.http.post(self.creds["mcp"], headers=headers, json=body)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            status: int | str = f"exc:{type(error).__name__}"
            self.rec.add(Call("mcp", op, status, ended - started), ended, repr(error))
            return status, None
        ended = time.monotonic()
        status, result = response.status_code, None
        if status == 200:
            try:
                answer = response.json()
            except ValueError:
                status = "mcp:not-json"
            else:
                result = answer.get("result")
                if result is None:
                    status = f"jsonrpc:{answer.get('error', {}).get('code')}"
                elif result.get("isError"):
                    code = (result.get("structuredContent") or {}).get("code", "unknown")
                    status = f"tool:{code}"
        self.rec.add(Call("mcp", op, status, ended - started), ended, response.text)
        structured = (result or {}).get("structuredContent") if status == 200 else None
        return status, structured

    def page(self, op: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        started = time.monotonic()
        try:
            response = self.console.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            call = Call("console", op, f"exc:{type(error).__name__}", ended - started)
            self.rec.add(call, ended, repr(error))
            return None
        ended = time.monotonic()
        status: int | str = response.status_code
        if op != "console-login" and status == 302:
            status = "console:to-login"  # the session was lost: a page redirects to the login
        sample = response.headers.get("location", "") or response.text[:200]
        self.rec.add(Call("console", op, status, ended - started), ended, sample)
        return response

    # ---- the operations -------------------------------------------------------------------------

    def mint(self) -> bool:
        for attempt in range(10):
            status, body = self.rest(
                "mint-run",
                "POST",
                "/v1/runs",
                token=self.creds["keys"]["app"],
                body={
                    "agent_id": AGENT,
                    "project_id": self.creds["project"],
                    "participant_id": self.participant,
                    "thread_id": self.thread,
                },
            )
            if status == 201:
                self.token = body["token"]
                return True
            time.sleep(0.2 * (attempt + 1))
        return False

    def see(self, facts: list[dict[str, Any]]) -> None:
        self.seen.extend(f["id"] for f in facts if isinstance(f, dict) and "id" in f)
        del self.seen[:-50]

    def search(self) -> None:
        query = self.rng.choice(QUERIES)
        if self.rng.random() < 1 / 3:
            args = {"query": query, "mode": "hybrid", "top_k": 10}
            status, body = self.mcp("search-mcp", "search_memories", args)
        else:
            body = {"query": query, "mode": "hybrid", "top_k": 10}
            status, body = self.rest("search", "POST", "/v1/facts/search", body=body)
        if status == 200 and body:
            self.see([hit.get("fact", {}) for hit in body.get("hits", [])])

    def remember(self) -> None:
        status, body = self.rest(
            "remember",
            "POST",
            "/v1/remember",
            body={
                "type": "preference",
                "text": f"Client {self.n} prefers {self.rng.choice(DRINKS)}, say {self.i}.",
                "tool_call_id": uuid.uuid4().hex,
            },
        )
        if status == 201 and body and body.get("approval_id") is None:
            self.see([body.get("fact", {})])
        elif (
            status == 409 and isinstance(body, dict) and body.get("code") == "memory-limit-reached"
        ):
            self.mint()  # a run writes at most KINDMEM_MAX_MEMORIES_PER_RUN: a new run

    def write(self) -> None:
        status, body = self.rest(
            "write-fact",
            "POST",
            "/v1/facts",
            token=self.creds["keys"]["admin"],
            body={
                "type": "note",
                "content": f"load client {self.n} note {self.i}: asked about "
                f"{self.rng.choice(QUERIES)} ({uuid.uuid4().hex[:8]})",
                "scope": {"project_id": self.creds["project"]},
            },
        )
        if status == 201 and body:
            self.see([body.get("fact", {})])

    def list_facts(self) -> None:
        if self.rng.random() < 1 / 3:
            status, body = self.mcp("list-mcp", "list_memories", {"limit": 20})
        else:
            status, body = self.rest("list", "GET", "/v1/facts?limit=20")
        if status == 200 and body:
            self.see(body.get("facts", []))

    def get_fact(self) -> None:
        if not self.seen:
            self.list_facts()
            return
        self.rest("get", "GET", f"/v1/facts/{self.rng.choice(self.seen)}")

    def recall(self) -> None:
        if not self.appended:
            status, _ = self.rest(
                "append-messages",
                "POST",
                f"/v1/conversations/{self.thread}/messages",
                body={
                    "messages": [
                        {"role": "user", "text": f"My parcel never arrived, I drink {d}."}
                        for d in self.rng.sample(DRINKS, 2)
                    ]
                    + [{"role": "agent", "text": "I opened a refund for the parcel."}]
                },
            )
            self.appended = status == 201
        self.rest(
            "recall",
            "POST",
            "/v1/recall",
            body={
                "selections": [{"agent_id": AGENT}],
                "mode": "keyword",
                "query": self.rng.choice(QUERIES),
                "top_k": 10,
            },
        )

    def login(self) -> bool:
        """The admin's console session: the login page (its csrftoken cookie), then the form."""
        form = self.page("console-login", "GET", "/console/login/?next=/console/")
        token = self.console.cookies.get("csrftoken")
        if form is None or form.status_code != 200 or not token:
            return False
        answer = self.page(
            "console-login",
            "POST",
            "/console/login/",
            data={
                "csrfmiddlewaretoken": token,
                "username": "admin",
                "password": self.creds["passwords"]["admin"],
                "next": "/console/",
            },
        )
        return answer is not None and answer.status_code == 302 and "sessionid" in answer.cookies

    def console_pages(self) -> None:
        if not self.logged_in:
            self.logged_in = self.login()
            if not self.logged_in:
                return
        front = self.page("console-front", "GET", "/console/")
        listing = self.page("console-list", "GET", self.rng.choice(CONSOLE_PAGES))
        if any(r is not None and r.status_code == 302 for r in (front, listing)):
            self.logged_in = False

    def one(self) -> None:
        self.i += 1
        draw = self.rng.random()
        if draw < 0.60:
            self.search()
        elif draw < 0.675:
            self.remember()
        elif draw < 0.75:
            self.write()
        elif draw < 0.825:
            self.list_facts()
        elif draw < 0.90:
            self.get_fact()
        elif draw < 0.95:
            self.recall()
        else:
            self.console_pages()

    def run(self, until: float) -> None:
        try:
            if not self.mint():
                return
            while time.monotonic() < until:
                self.one()
        finally:
            self.http.close()
            self.console.close()


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
        KINDMEM_EMBEDDER=args.embedder,
        KINDMEM_WRITE_RATE="1000000/min",
        PYTHONPATH=str(ROOT),
    )
    # the local model's ONNX file outlives --fresh (made once, tens of seconds)
    env.setdefault("KINDMEM_MODEL_CACHE_DIR", str(data_dir.parent / "models"))
    topology = ExitStack()
    database = None
    replica = None
    if args.topology == "pooled":
        database, replica, pooled_env = pooled(topology, data_dir, args.pool_size)
        env.update(pooled_env)
    log_path, access_path = data_dir / "run.log", data_dir / "access.log"
    log, access = log_path.open("wb"), access_path.open("wb")
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, "-m", "config.cli", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=ROOT,
    )
    assert run.stdout is not None
    samplers: list[ConnectionSampler] = []
    summary: dict[str, Any] = {}
    try:
        creds = read_credentials(run.stdout, time.monotonic() + 900)
        # the rest of stdout (gunicorn's access log) to a file, so the pipe never fills
        threading.Thread(
            target=lambda: [
                access.write(chunk) for chunk in iter(lambda: run.stdout.read(4096), b"")
            ],
            daemon=True,
        ).start()
        if not credentials_complete(creds):
            raise SystemExit(f"no credentials from `kindmem run` (see {log_path}): {creds}")
        wait_until_up(base, creds)
        print(f"kindmem run up in {time.monotonic() - started:.1f} s on {base}", flush=True)

        from config.embedded_db import ensure_embedded_database

        samplers.append(ConnectionSampler(database or ensure_embedded_database(data_dir)))
        if replica is not None:
            replica_params = {**replica.primary, "host": replica.socket_dir, "port": replica.port}
            samplers.append(ConnectionSampler(replica_params, label="replica:"))
        for each in samplers:
            each.start()
        sampler = samplers[0]
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
            "max_connections": sampler.max_connections,
            "levels": [],
        }
        for clients in levels:
            result = run_level(clients, args, base, creds, samplers)
            summary["levels"].append(result)
            print(level_line(result), flush=True)
            if line := not_ok_line(result):
                print(line, flush=True)
            time.sleep(1)  # what is in flight settles before the next level
        summary["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        for each in samplers:
            each.stop()
        stop_start = time.monotonic()
        run.send_signal(signal.SIGINT)
        try:
            returncode = run.wait(timeout=120)
        except subprocess.TimeoutExpired:
            run.kill()
            returncode = run.wait()
        log.close()
        topology.close()  # PgBouncer and the standby
        summary["run_exit_code"] = returncode
        summary["stop_seconds"] = round(time.monotonic() - stop_start, 1)
    text = log_path.read_text(errors="replace")
    summary["run_log_tracebacks"] = text.count("Traceback (most recent call last)")
    print(json.dumps(summary, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"load-{stamp}.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written to {out.relative_to(ROOT)}", flush=True)


def pooled(
    stack: ExitStack, data_dir: Path, pool_size: int
) -> tuple[dict[str, Any], Any, dict[str, str]]:
    """The embedded PostgreSQL started here, a streaming standby of it and PgBouncer in front
    of it (the fixtures the suite's own tests use: tests/processes.py), and the environment
    under which `kindmem run`'s processes reach the database through PgBouncer, read from the
    standby and migrate directly."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("KINDMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    import django

    django.setup()
    from django.conf import settings

    from config.embedded_db import ensure_embedded_database
    from tests.processes import pgbouncer, standby

    database = ensure_embedded_database(data_dir)
    bouncer = stack.enter_context(pgbouncer(pool_size=pool_size, params=database))
    replica = stack.enter_context(standby(database))
    env = {
        **bouncer.env,
        "KINDMEM_DATABASE_LOGIN": "migration",  # `run` migrates; its children log in as app
        "KINDMEM_REPLICA_URL": replica.url(settings.KINDMEM_APP_ROLE),
        "SECRET_KEY": "bench-load-pooled",
        # plain HTTP on loopback, as the one-machine default serves the console
        "SESSION_COOKIE_SECURE": "false",
    }
    return database, replica, env


def wait_until_up(base: str, creds: dict[str, Any]) -> None:
    """Until the web answers /healthz 200 and the MCP server answers a tools/list."""
    deadline = time.monotonic() + 300
    with httpx.Client(timeout=10) as http:
        while time.monotonic() < deadline:
            try:
                web = http.get(base + "/healthz").status_code
                mcp = http.post(
                    creds["mcp"],
                    headers={
                        "Authorization": f"Bearer {creds['keys']['app']}",
                        "Accept": "application/json, text/event-stream",
                    },
                    json={"jsonrpc": "2.0", "id": 0, "method": "tools/list"},
                ).status_code
                if web == 200 and mcp == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    raise SystemExit("kindmem run did not answer on both ports within 300 s")


if __name__ == "__main__":
    main()
