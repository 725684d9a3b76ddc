"""What metrics and tracing cost at bench/load.py's 8-client level, and how soon a webhook
arrives under that load (issue 44).

Runs bench/load.py's level (the same mix, clients and `kindmem run`: bench/load_topology.py
`kindmem_running`) once per configuration of `--observability`, `--repeats` times,
alternating and reversing the order every repeat (on, off; off, on; on, off; ...) so that a
drift of the machine (the data growing, someone else's build) falls on all:

    on   KINDMEM_METRICS=on (the default: every request, task and state counted, in
         prometheus-client's multiprocess files) and OTEL_EXPORTER_OTLP_ENDPOINT at a real
         OTLP/HTTP receiver in this process (`SpanSink`: it answers POST /v1/traces 200 and
         counts the spans and bytes), so every process really exports its spans;
    off  KINDMEM_METRICS=off and no OTEL_EXPORTER_OTLP_ENDPOINT (nothing counted, nothing
         traced);
    metrics, tracing   one of the two alone (where the cost of "on" is).

In both, before the level, the demo tenant's admin key registers a webhook endpoint (POST
/v1/webhooks) for `fact.changed` and `approval.pending`, the events the mix's writes produce,
at a receiver in this process (`WebhookSink`; a loopback URL is allowed by
KINDMEM_WEBHOOKS_ALLOW_PRIVATE_URLS=true, set in the started processes' environment only):
the throughput compared is of metrics and tracing alone, webhooks delivering in both. The
receiver checks each delivery's signature (Standard Webhooks) and takes its latency as the
time from the event's creation (the payload's `timestamp`, the outbox row's `created_at`) to
its receipt, for the events created in the measured window; after the level it waits until
deliveries stop coming (at most `--drain` seconds) so that the slowest are counted.

Prints a line per run (req/s, p50/p99, 500s, load average, spans, webhooks), then per
configuration the median and min-max of req/s, p50 and p99, the ratio to off of the medians
and of each repeat's runs, and the webhooks' p50/p99 and count (all its runs' events pooled);
a compact JSON of the same in bench/results/observability-<timestamp>.json.

    .venv/bin/python bench/observability.py [--repeats 3] [--clients 8] [--seconds 20]
        [--warmup 3] [--observability on,off|on,metrics,tracing,off|...]
        [--embedder local|hashing] [--seed 1] [--data-dir var/bench/observability]
        [--fresh] [--settle 1] [--drain 30]

`--fresh` empties the data folder once, before the first run; later runs reuse it (the
configurations alternate over the same growing data). The first `--settle` runs (default 1,
off) are printed and not counted: a fresh instance's first minute is nothing like the next.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import secrets
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_level import ms, run_level  # noqa: E402
from bench.load_topology import kindmem_running  # noqa: E402

EVENTS = ["fact.changed", "approval.pending"]
# a configuration: (metrics counted, traces exported)
CONFIGS = {
    "on": (True, True),
    "off": (False, False),
    "metrics": (True, False),
    "tracing": (False, True),
}
METRICS_TOKEN = secrets.token_urlsafe(16)  # the started processes' /metrics credential


class _Sink(ThreadingHTTPServer):
    """A loopback HTTP server on a port of its own, serving on a daemon thread."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the exporters reuse their connection

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def body(self) -> bytes:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        return gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw

    def answer(self, status: int, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", "0")
        self.end_headers()


class SpanSink(_Sink):
    """An OTLP/HTTP trace receiver: POST /v1/traces (protobuf) answered 200, spans counted."""

    def __init__(self) -> None:
        self.spans = self.exports = self.bytes = 0
        super().__init__(_SpanHandler)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"exports": self.exports, "spans": self.spans, "bytes": self.bytes}


class _SpanHandler(_Quiet):
    server: SpanSink

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        body = self.body()
        if self.path != "/v1/traces":
            self.answer(404)
            return
        request = ExportTraceServiceRequest.FromString(body)
        spans = sum(
            len(scope.spans)
            for resource in request.resource_spans
            for scope in resource.scope_spans
        )
        with self.server.lock:
            self.server.exports += 1
            self.server.spans += spans
            self.server.bytes += len(body)
        self.answer(200, "application/x-protobuf")  # an empty ExportTraceServiceResponse


@dataclass
class Received:
    kind: str
    created: float  # the event's creation (the payload's timestamp), Unix time
    received: float


class WebhookSink(_Sink):
    """A webhook receiver: every POST's signature checked against `secret`, its event recorded
    once (deduplicated on webhook-id), answered 204."""

    def __init__(self) -> None:
        self.secret = ""
        self.events: dict[str, Received] = {}
        self.duplicates = self.bad_signatures = 0
        self.last_at = 0.0
        super().__init__(_WebhookHandler)

    def reset(self, secret: str) -> None:
        with self.lock:
            self.secret, self.events = secret, {}
            self.duplicates = self.bad_signatures = 0


class _WebhookHandler(_Quiet):
    server: WebhookSink

    def do_POST(self) -> None:
        from standardwebhooks import Webhook, WebhookVerificationError

        received = time.time()
        body = self.body()
        sink = self.server
        try:
            payload = Webhook(sink.secret).verify(body, dict(self.headers.items()))
        except WebhookVerificationError:
            with sink.lock:
                sink.bad_signatures += 1
            self.answer(400)
            return
        created = datetime.fromisoformat(payload["timestamp"]).timestamp()
        with sink.lock:
            sink.last_at = received
            msg_id = self.headers["webhook-id"]
            if msg_id in sink.events:
                sink.duplicates += 1
            else:
                sink.events[msg_id] = Received(payload["type"], created, received)
        self.answer(204)


def register_endpoint(base: str, admin_key: str, url: str) -> str:
    """The demo tenant's only webhook endpoint, at `url` (an earlier run's deleted): its
    signing secret."""
    headers = {"Authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        for endpoint in http.get("/v1/webhooks").raise_for_status().json()["endpoints"]:
            http.delete(f"/v1/webhooks/{endpoint['id']}").raise_for_status()
        created = http.post(
            "/v1/webhooks", json={"url": url, "events": EVENTS, "description": "bench"}
        )
        created.raise_for_status()
        return created.json()["secret"]


def drained(sink: WebhookSink, *, quiet: float, limit: float) -> None:
    """Until no delivery has arrived for `quiet` seconds, or `limit` seconds have passed."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and time.time() - sink.last_at < quiet:
        time.sleep(0.5)


def webhook_figures(sink: WebhookSink, window: tuple[float, float]) -> dict[str, Any]:
    with sink.lock:
        mine = [e for e in sink.events.values() if window[0] <= e.created <= window[1]]
        other = {"duplicates": sink.duplicates, "bad_signatures": sink.bad_signatures}
    by_kind: dict[str, int] = {}
    for e in mine:
        by_kind[e.kind] = by_kind.get(e.kind, 0) + 1
    latencies = [max(e.received - e.created, 0.0) for e in mine]
    # "latencies": pooled over a configuration's runs by `summarise`, not written out
    return {
        "count": len(mine),
        "by_kind": by_kind,
        **ms(latencies),
        **other,
        "latencies": latencies,
    }


def run_once(
    config: str, args: argparse.Namespace, data_dir: Path, spans: SpanSink, hooks: WebhookSink
) -> dict[str, Any]:
    counted, traced = CONFIGS[config]
    env = {
        "KINDMEM_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
        "KINDMEM_METRICS": "on" if counted else "off",
        "KINDMEM_METRICS_TOKEN": METRICS_TOKEN,
    }
    if traced:
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=spans.url, OTEL_SERVICE_NAME="kindmem-bench")
    spans_before = spans.counts()
    with kindmem_running(data_dir, embedder=args.embedder, env=env) as up:
        hooks.reset(register_endpoint(up.base, up.creds["keys"]["admin"], hooks.url + "/hook"))
        load_before = os.getloadavg()[0]
        started = time.time()
        level = run_level(args.clients, args, up.base, up.creds, up.samplers)
        window = (started + args.warmup, started + args.warmup + args.seconds)
        load_after = os.getloadavg()[0]
        drained(hooks, quiet=3, limit=args.drain)
        metrics = httpx.get(
            up.base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
    spans_after = spans.counts()  # the exporters' last batches are sent as the processes stop
    return {
        "config": config,
        "req_per_s": level["req_per_s"],
        "p50_ms": level["p50_ms"],
        "p99_ms": level["p99_ms"],
        "requests": level["requests"],
        "server_errors_500": level["server_errors_500"],
        "by_status": level["by_status"],
        "load_average_1m": [round(load_before, 2), round(load_after, 2)],
        "metrics_status": metrics.status_code,
        "spans": {k: spans_after[k] - spans_before[k] for k in spans_after},
        "webhooks": webhook_figures(hooks, window),
        "run_exit_code": up.exit_code,
        "run_log_tracebacks": up.tracebacks(),
    }


def run_line(r: dict[str, Any]) -> str:
    hooks, spans = r["webhooks"], r["spans"]
    return (
        f"{r['config']:>7}: {r['req_per_s']:6.1f} req/s  p50 {r['p50_ms']} / p99 {r['p99_ms']} ms  "
        f"500s {r['server_errors_500']}  load {r['load_average_1m'][0]}->"
        f"{r['load_average_1m'][1]}  /metrics {r['metrics_status']}  spans {spans['spans']} "
        f"({spans['bytes'] // 1024} KiB)  webhooks {hooks['count']} {hooks['by_kind']} "
        f"p50 {hooks['p50_ms']} / p99 {hooks['p99_ms']} ms  dup {hooks['duplicates']}  "
        f"bad sig {hooks['bad_signatures']}  tracebacks {r['run_log_tracebacks']}"
    )


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "min": min(values), "max": max(values)}


def summarise(runs: list[dict[str, Any]], configs: list[str]) -> dict[str, Any]:
    """Per configuration the median and range of each figure, and each one's ratio to "off":
    of the medians, and of each repeat's two runs (`runs` in repeats of `configs`)."""
    out: dict[str, Any] = {}
    for config in configs:
        mine = [r for r in runs if r["config"] == config]
        out[config] = {
            "runs": len(mine),
            **{k: spread([r[k] for r in mine]) for k in ("req_per_s", "p50_ms", "p99_ms")},
            # every event of every run of the configuration, as one sample: not a median of p99s
            "webhooks": {
                "count": sum(r["webhooks"]["count"] for r in mine),
                **ms([s for r in mine for s in r["webhooks"]["latencies"]]),
                "p50_ms_by_run": [r["webhooks"]["p50_ms"] for r in mine],
                "p99_ms_by_run": [r["webhooks"]["p99_ms"] for r in mine],
            },
        }
    if "off" not in configs:
        return out
    repeats = [runs[i : i + len(configs)] for i in range(0, len(runs), len(configs))]
    for config in configs:
        if config == "off":
            continue
        mine, off = out[config], out["off"]
        out[f"ratio_{config}_off"] = {
            k: round(mine[k]["median"] / off[k]["median"], 3)
            for k in ("req_per_s", "p50_ms", "p99_ms")
        }
        by_config = [{r["config"]: r["req_per_s"] for r in each} for each in repeats]
        out[f"req_per_s_ratio_{config}_off_by_repeat"] = [
            round(each[config] / each["off"], 3) for each in by_config
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3, help="runs of each configuration")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20, help="measured, per run")
    parser.add_argument("--warmup", type=float, default=3, help="not counted, per run")
    parser.add_argument(
        "--observability",
        default="on,off",
        help=f"configurations, comma-separated, of {', '.join(CONFIGS)}",
    )
    parser.add_argument("--embedder", default="local", help="KINDMEM_EMBEDDER (hashing: cheap)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench" / "observability"))
    parser.add_argument("--fresh", action="store_true", help="empty the data folder first")
    parser.add_argument("--settle", type=int, default=1, help="first runs, not counted")
    parser.add_argument("--drain", type=float, default=30, help="most seconds to wait for hooks")
    args = parser.parse_args()
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)  # "off" is off
    data_dir = Path(args.data_dir).resolve()
    if args.fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    configs = [c.strip() for c in args.observability.split(",") if c.strip()]
    if unknown := set(configs) - CONFIGS.keys():
        parser.error(f"unknown configurations {sorted(unknown)}; known: {', '.join(CONFIGS)}")
    order = [c for i in range(args.repeats) for c in (configs if i % 2 == 0 else configs[::-1])]
    spans, hooks = SpanSink(), WebhookSink()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = [round(x, 2) for x in os.getloadavg()]
    settling = []
    for _ in range(args.settle):
        # a fresh instance's first minute (tables not yet analysed, the model's file made)
        # is nothing like the next ones: printed, not counted
        settling.append(run_once("off", args, data_dir, spans, hooks))
        print("settle " + run_line(settling[-1]), flush=True)
    runs = []
    for config in order:
        runs.append(run_once(config, args, data_dir, spans, hooks))
        print(run_line(runs[-1]), flush=True)
    summary = {
        "started_at": started_at,
        "clients": args.clients,
        "seconds": args.seconds,
        "warmup": args.warmup,
        "embedder": args.embedder,
        "seed": args.seed,
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "summary": summarise(runs, configs),
        "settling": settling,
        "runs": runs,
    }
    for r in settling + runs:
        del r["webhooks"]["latencies"]
    spans.shutdown()
    hooks.shutdown()
    print(json.dumps(summary["summary"], indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"observability-{stamp}.json"
    out.write_text(json.dumps(summary, separators=(",", ":")) + "\n")  # a few KB
    print(f"written to {out.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main()
