"""kindmem beside a plain pgvector table, in one run on one machine, with the same embedder.

    .venv/bin/python bench/peers.py                      # 10k facts, 100 users, 300 searches
    .venv/bin/python bench/peers.py --embedder hashing   # a pipeline check, not the benchmark

In its own database (`kindmem_bench_peers`, kept between runs; `--fresh` rebuilds it) it holds
the same 10,000 short facts twice, 100 per user for 100 users:

- **plain**: one table `bench_plain_memory (id, user_id, content, embedding vector(384))` with
  an HNSW index (cosine, pgvector's defaults) and a btree on `user_id`, queried as a plain
  pgvector application would: one psycopg connection in autocommit, `WHERE user_id = %s
  ORDER BY embedding <=> %s LIMIT 10`, and one `INSERT` per write;
- **kindmem**: the facts of one project's 100 end users (participants), loaded by COPY in the
  rows the write path writes (fact, revision with its vector, subject), searched as a run token
  minted for the user (the reader guard lets it read that user's facts and the project's).

Then, interleaved (each search or write of one side next to the same one of the others, in
rotating order), with distinct query texts per search so that no query vector is reused:

- search, top-10, user-scoped, 300 per mode: the plain table in-process (embed + SQL),
  `fact_search` in-process (embed + the guarded queries, as the app role behind row security),
  and `POST /v1/facts/search` over HTTP to gunicorn as production starts it (config.gunicorn_conf,
  2 workers), semantic and hybrid (the plain table has no keyword leg: hybrid is held against
  its one semantic query); over HTTP twice: a new connection per request (`http`) and one
  connection kept between requests (`http_kept`, as kindmem's clients and httpx keep theirs);
- writes, one client per side, sequential: the plain `INSERT` with its embedding against
  `POST /v1/facts` over HTTP (the server embeds on write, within its budget), both ways of
  connecting, each HTTP side as its own credential (the write rate is per credential), in
  facts/s.

It prints p50/p95 per figure and the ratios kindmem / plain, and writes
bench/results/peers-<embedder>.json. Every figure includes embedding the text with the same
model (all-MiniLM-L6-v2 on ONNX Runtime, one thread), which is most of the plain table's time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench._timing import percentiles_ms  # noqa: E402
from bench.peers_data import (  # noqa: E402
    WRITER_PREFIX,
    corpus_vectors,
    forget_writes,
    generate,
    is_loaded,
    load_kindmem,
    load_plain,
    plain_connect,
    user_name,
)
from config.embedded_db import process_database_env  # noqa: E402

DATABASE = "kindmem_bench_peers"
ROOT = Path(__file__).resolve().parent
MODES = ("semantic", "hybrid")
TOP_K = 10
# plain table, kindmem in-process, over HTTP with a connection per request, with one kept
SEARCHERS = ("plain", "in_process", "http", "http_kept")


# ---- the three searchers -----------------------------------------------------------------------


class Plain:
    """What a plain pgvector application does: embed, one query, one insert."""

    SEARCH = (
        "SELECT id, content, 1 - (embedding <=> %(q)s) AS score FROM bench_plain_memory"
        " WHERE user_id = %(user)s ORDER BY embedding <=> %(q)s LIMIT %(k)s"
    )
    INSERT = "INSERT INTO bench_plain_memory (user_id, content, embedding) VALUES (%s, %s, %s)"

    def __init__(self, db: psycopg.Connection, embedder: Any) -> None:
        self.db = db
        self.embedder = embedder

    def search(self, user: int, query: str) -> list:
        [vector] = self.embedder.embed([query])
        return self.db.execute(
            self.SEARCH,
            {"q": np.asarray(vector, dtype=np.float32), "user": user_name(user), "k": TOP_K},
        ).fetchall()

    def write(self, user: str, text: str) -> None:
        [vector] = self.embedder.embed([text])
        self.db.execute(self.INSERT, [user, text, np.asarray(vector, dtype=np.float32)])


class InProcess:
    """kindmem's search function in this process, as the web process runs it: the run's
    readers, the app role confined to the tenant by row security, the query embedded."""

    def __init__(self, runs: dict[int, Any]) -> None:
        self.runs = runs
        self.statements: dict[str, int] = {}

    def search(self, user: int, query: str, mode: str) -> list:
        from facts.search import FactSearch, fact_search
        from kindmem.access import readers_for
        from kindmem.row_security import tenant_context

        principal = self.runs[user].principal
        count = [0]

        def counting(execute, sql, params, many, context):
            count[0] += 1
            return execute(sql, params, many, context)

        with tenant_context(principal.tenant_id), connection.execute_wrapper(counting):
            hits = fact_search(
                search=FactSearch(
                    tenant_id=principal.tenant_id,
                    readers=readers_for(principal),
                    mode=mode,
                    query=query,
                    top_k=TOP_K,
                )
            )
        self.statements[mode] = count[0]
        return hits


class Http:
    """A client of the API. `keep=False`: a new connection per request, as a plain HTTP client
    makes it; `keep=True`: one connection kept between requests, as kindmem's clients (httpx)
    and most agents' HTTP libraries keep theirs."""

    def __init__(self, port: int, *, keep: bool = False) -> None:
        self.port = port
        self.keep = keep
        self._kept: http.client.HTTPConnection | None = None

    def post(self, path: str, token: str, body: dict) -> tuple[int, dict]:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        if not self.keep:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                return self._exchange(conn, path, body, headers)
            finally:
                conn.close()
        for attempt in (1, 2):
            if self._kept is None:
                self._kept = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                return self._exchange(self._kept, path, body, headers)
            except (http.client.RemoteDisconnected, ConnectionError):
                # the server closed the idle connection (its keepalive) before this request
                self._kept.close()
                self._kept = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _exchange(
        conn: http.client.HTTPConnection, path: str, body: dict, headers: dict[str, str]
    ) -> tuple[int, dict]:
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    def search(self, token: str, query: str, mode: str) -> list:
        status, body = self.post(
            "/v1/facts/search", token, {"mode": mode, "query": query, "top_k": TOP_K}
        )
        assert status == 200, body
        return body["hits"]

    def write(self, token: str, project_id: str, user: str, text: str) -> dict:
        status, body = self.post(
            "/v1/facts",
            token,
            {
                "type": "note",
                "content": text,
                "scope": {"project_id": project_id, "participant_id": user},
            },
        )
        assert status == 201, body
        return body


def start_server(port: int, embedder: str, broker_url: str) -> subprocess.Popen[bytes]:
    """gunicorn as production starts it (tests/processes.py's web_server, `kindmem run`)."""
    env = {
        **os.environ,
        **process_database_env(connection.get_connection_params(), settings.KINDMEM_APP_ROLE),
        "SECRET_KEY": "bench-peers",
        "KINDMEM_EMBEDDER": embedder,
        "KINDMEM_EMBEDDER_THREADS": "1",
        # every search embeds its question: the two HTTP sides ask the same questions, and a
        # worker's query cache would answer the second from the first
        "KINDMEM_QUERY_CACHE_SIZE": "0",
        "CELERY_BROKER_URL": broker_url,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "python:config.gunicorn_conf",
            "config.asgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--log-level",
            "warning",
            "--no-control-socket",
            # a worker's first search loads the model: tens of seconds on a loaded machine
            "--timeout",
            "180",
        ],
        env=env,
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


# ---- figures -----------------------------------------------------------------------------------


def pct(samples: list[float]) -> dict[str, float]:
    p = percentiles_ms(samples)
    return {"p50": round(p[50], 2), "p95": round(p[95], 2), "n": len(samples)}


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--facts-per-user", type=int, default=100)
    parser.add_argument("--searches", type=int, default=300, help="per mode")
    parser.add_argument("--writes", type=int, default=300, help="per side")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--fresh", action="store_true", help="rebuild the database")
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    args = parser.parse_args()

    settings.EMBEDDER = args.embedder
    settings.QUERY_CACHE_SIZE = 0  # as the server's (start_server): no query vector reused
    from embeddings.providers import get_embedder

    embedder = get_embedder()
    assert embedder is not None
    results: dict[str, Any] = {
        "embedder": embedder.model,
        "users": args.users,
        "facts": args.users * args.facts_per_user,
        "load_average_start": os.getloadavg(),
    }
    rows = generate(args.users, args.facts_per_user, args.seed)
    vectors = corpus_vectors([t for _, t, _ in rows], embedder, args.embedder)

    use_bench_database(DATABASE, fresh=args.fresh)
    plain_db = plain_connect()
    if not is_loaded(plain_db, len(rows)):
        if not args.fresh:  # a partial or other corpus: start again from an empty database
            plain_db.close()
            connection.close()
            use_bench_database(DATABASE, fresh=True)
            plain_db = plain_connect()
        print(f"loading {len(rows):,} facts twice ...", flush=True)
        results["load_s"] = {
            "plain": round(load_plain(plain_db, rows, vectors), 1),
            "kindmem": round(load_kindmem(rows, vectors, embedder.model), 1),
        }
        print(f"  {results['load_s']}", flush=True)
    forget_writes(plain_db)

    from kindmem.models import Project
    from tests import factories

    project = Project.objects.get(name="peers-project")
    app = factories.app_key_create(project.tenant, [project])
    runs = {
        u: factories.run_create(app, project, participant_id=user_name(u), thread_id=None)
        for u in range(args.users)
    }

    # 2 x `searches` distinct questions, each about one of the user's facts
    rng = random.Random(args.seed + 1)
    by_user: dict[int, list[str]] = {}
    for user, _, question in rows:
        by_user.setdefault(user, []).append(question)
    asked: dict[str, list[tuple[int, str]]] = {m: [] for m in MODES}
    used: set[str] = set()
    for mode in MODES:
        i = 0
        while len(asked[mode]) < args.searches:
            user = i % args.users
            i += 1
            fresh = [q for q in by_user[user] if q not in used]
            question = rng.choice(fresh) if fresh else f"{rng.choice(by_user[user])} ({i})"
            used.add(question)
            asked[mode].append((user, question))

    plain = Plain(plain_db, embedder)
    inproc = InProcess(runs)
    client = Http(args.port)
    kept = Http(args.port, keep=True)
    embedder.embed(["warm up"])
    # the web process's collector settings (config/wsgi.py), once everything is loaded: the
    # in-process searches run as the web process runs them (the plain table's share them)
    from config.collector import tune_for_serving

    tune_for_serving()
    from tests.processes import embedded_broker

    with tempfile.TemporaryDirectory() as broker_dir, embedded_broker(Path(broker_dir)) as broker:
        server = start_server(args.port, args.embedder, broker.url)
        try:
            wait_for(server, client, runs[0].token)
            results["search"] = search_figures(asked, plain, inproc, client, kept, runs)
            results["search_statements_in_process"] = inproc.statements
            # a credential per HTTP side: each stays within the write rate (KINDMEM_WRITE_RATE)
            kept_app = factories.app_key_create(project.tenant, [project])
            results["write"] = write_figures(
                args.writes,
                plain,
                {"http": (client, app.token), "http_kept": (kept, kept_app.token)},
                str(project.id),
            )
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    from facts.models import Revision

    results["write"]["kindmem_not_embedded_on_write"] = (
        Revision.objects.filter(fact__participant_id__startswith=WRITER_PREFIX)
        .exclude(embedding_state="done")
        .count()
    )
    results["load_average_end"] = os.getloadavg()
    out = ROOT / "results" / f"peers-{args.embedder}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    report(results)
    print(f"wrote {out.relative_to(ROOT.parent)}")


def wait_for(server: subprocess.Popen[bytes], client: Http, token: str) -> None:
    """Until the server answers, and both workers have loaded the model (a search each)."""
    deadline = time.monotonic() + 180
    while True:
        try:
            for _ in range(8):
                client.search(token, "warm up", "hybrid")
            return
        except OSError:
            if server.poll() is not None:
                raise SystemExit(server.stderr.read().decode()[-3000:]) from None
            assert time.monotonic() < deadline, "the server did not answer within 180 s"
            time.sleep(1)


def search_figures(
    asked: dict[str, list[tuple[int, str]]],
    plain: Plain,
    inproc: InProcess,
    client: Http,
    kept: Http,
    runs: dict[int, Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        samples: dict[str, list[float]] = {k: [] for k in SEARCHERS}
        hit_counts: dict[str, list[int]] = {k: [] for k in samples}
        calls = {
            "plain": lambda u, q: plain.search(u, q),
            "in_process": lambda u, q, m=mode: inproc.search(u, q, m),
            "http": lambda u, q, m=mode: client.search(runs[u].token, q, m),
            "http_kept": lambda u, q, m=mode: kept.search(runs[u].token, q, m),
        }
        order = list(calls)
        for i, (user, query) in enumerate(asked[mode]):
            turn = i % len(order)
            for name in order[turn:] + order[:turn]:  # rotate who goes first
                seconds, hits = timed(calls[name], user, query)
                samples[name].append(seconds)
                hit_counts[name].append(len(hits))
        out[mode] = {name: pct(s) for name, s in samples.items()}
        for name, counts in hit_counts.items():
            out[mode][name]["mean_hits"] = round(statistics.mean(counts), 2)
        for name in SEARCHERS[1:]:
            out[mode][f"{name}_over_plain"] = {
                p: round(out[mode][name][p] / out[mode]["plain"][p], 2) for p in ("p50", "p95")
            }
        print(f"  search {mode}: {json.dumps(out[mode])}", flush=True)
    return out


def write_figures(
    n: int, plain: Plain, http_sides: dict[str, tuple[Http, str]], project_id: str
) -> dict[str, Any]:
    """Rotating blocks of 10, one writer each, distinct texts on each side; each HTTP side
    (a client and its credential's token) writes as its own credential."""
    sides_in_order = ["plain", *http_sides]
    texts = [
        (f"{WRITER_PREFIX}{i % 50:02d}", f"{t} (note {i})")
        for i, (_, t, _) in enumerate(generate(50, (3 * n) // 50 + 1, 99)[: 3 * n])
    ]
    for user, text in texts[:4]:  # both workers warm on the write path too
        client, token = http_sides["http"]
        client.write(token, project_id, user, f"warm up {text}")
    samples: dict[str, list[float]] = {side: [] for side in sides_in_order}
    block = 10
    for start in range(0, n, block):
        turn = (start // block) % len(sides_in_order)
        for side in sides_in_order[turn:] + sides_in_order[:turn]:
            for i in range(start, min(start + block, n)):
                user, text = texts[3 * i + sides_in_order.index(side)]
                if side == "plain":
                    seconds, _ = timed(plain.write, user, text)
                else:
                    client, token = http_sides[side]
                    seconds, _ = timed(client.write, token, project_id, user, text)
                samples[side].append(seconds)
    out: dict[str, Any] = {}
    for side, s in samples.items():
        out[side] = {**pct(s), "facts_per_s": round(len(s) / sum(s), 1)}
    for side in http_sides:
        out[f"{side}_rate_over_plain"] = round(
            out[side]["facts_per_s"] / out["plain"]["facts_per_s"], 3
        )
    print(f"  write: {json.dumps(out)}", flush=True)
    return out


def report(results: dict[str, Any]) -> None:
    print()
    print(
        f"{results['facts']:,} facts, {results['users']} users, embedder {results['embedder']};"
        f" load average {results['load_average_start'][0]:.1f} -> "
        f"{results['load_average_end'][0]:.1f}"
    )
    print(f"{'search (ms)':28} {'p50':>8} {'p95':>8} {'x plain p50':>12} {'x plain p95':>12}")
    for mode in MODES:
        figures = results["search"][mode]
        for name in SEARCHERS:
            f = figures[name]
            ratio = figures.get(f"{name}_over_plain", {"p50": 1.0, "p95": 1.0})
            print(
                f"{mode + ' ' + name:28} {f['p50']:>8} {f['p95']:>8}"
                f" {ratio['p50']:>12} {ratio['p95']:>12}"
            )
    print(f"statements per in-process search: {results['search_statements_in_process']}")
    w = results["write"]
    print(f"{'write':28} {'p50 ms':>8} {'p95 ms':>8} {'facts/s':>12}")
    for side in ("plain", "http", "http_kept"):
        print(f"{side:28} {w[side]['p50']:>8} {w[side]['p95']:>8} {w[side]['facts_per_s']:>12}")
    print(
        f"HTTP write rate / plain insert rate: {w['http_rate_over_plain']}, connection kept:"
        f" {w['http_kept_rate_over_plain']}"
        f" (revisions left for the worker: {w['kindmem_not_embedded_on_write']})"
    )


if __name__ == "__main__":
    main()
