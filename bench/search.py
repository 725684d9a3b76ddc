"""Fact search at scale: keyword, semantic and hybrid, per reader selectivity.

    .venv/bin/python bench/search.py --facts 100000          # the 100k run
    .venv/bin/python bench/search.py --facts 1000000 --fresh # the 1M run (hours here)

Generates realistic facts (bench/search_corpus.py: short texts about people, preferences and
projects; Zipf-distributed tenants, projects and participants; seeded), embeds them once with
the local model (all-MiniLM-L6-v2, cached under var/bench/search/, bench/search_vectors.py),
loads them with COPY into its own database (`kindmem_bench_search`, kept between runs) and
rebuilds the GIN and HNSW indexes, timing the builds. Then, for three readers of the largest
tenant (its admin: 100% of the tenant; an app key of one project: ~5%; a run for one end user:
~0.1%) it measures:

- p50/p95/p99 of the SQL search alone (`fact_search_embedded`, query vector precomputed) per
  mode, top_k = 10;
- recall@10 of the indexed semantic leg (HNSW, iterative scan) and of hybrid, against the
  same search with index scans off (an exact scan of the readable set), same vectors;
- p50/p95/p99 of the whole HTTP request (gunicorn's asgi workers, 2, local query embedding), and
  throughput with 2 client processes;
- single-text query embedding latency.

It prints a table and writes JSON to bench/results/search-<facts>.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench._timing import percentiles_ms  # noqa: E402
from bench.search_corpus import Row, generate  # noqa: E402
from bench.search_load import index_sizes, load  # noqa: E402
from bench.search_vectors import corpus_vectors  # noqa: E402
from config.embedded_db import process_database_env  # noqa: E402
from facts.models import Fact  # noqa: E402
from facts.search import FactSearch, fact_search_embedded, searchable  # noqa: E402
from kindmem.access import Principal, readers_for  # noqa: E402
from kindmem.models import ApiKey, Project, Tenant  # noqa: E402
from kindmem.row_security import tenant_context  # noqa: E402

DATABASE = "kindmem_bench_search"
MODES = ("keyword", "semantic", "hybrid")
ROOT = Path(__file__).resolve().parent


def pct(samples: list[float]) -> dict[str, float]:
    p = percentiles_ms(samples)
    return {"p50": round(p[50], 1), "p95": round(p[95], 1), "p99": round(p[99], 1)}


def choose_readers(rows: list[Row]) -> dict[str, dict]:
    """Three readers of the largest tenant, at ~100%, ~5% and ~0.1% of its rows."""
    from tests import factories

    tenant_rows = [r for r in rows if r.tenant == 0]
    n = len(tenant_rows)
    per_project = Counter(r.project for r in tenant_rows)
    five = min(per_project, key=lambda p: abs(per_project[p] - 0.05 * n))
    project_wide = Counter(r.project for r in tenant_rows if r.participant is None)
    per_person = Counter(
        (r.project, r.participant) for r in tenant_rows if r.participant is not None
    )
    tenth = min(per_person, key=lambda pp: abs(per_person[pp] + project_wide[pp[0]] - 0.001 * n))
    tenant = Tenant.objects.get(name="bench-0")
    projects = {p.name: p for p in Project.objects.filter(tenant=tenant)}
    admin = ApiKey.objects.filter(tenant=tenant, kind="admin").order_by("created_at").first()
    admin_keyed = factories.Keyed(admin, "")
    app = factories.app_key_create(tenant, [projects[f"p{five}"]])
    small = projects[f"p{tenth[0]}"]
    run_app = factories.app_key_create(tenant, [small])
    run = factories.run_create(
        run_app, small, participant_id=f"cust-{tenth[0]}-{tenth[1]}", thread_id=None
    )
    # admin keys are stored hashed: mint a fresh one whose token we know, for HTTP
    admin_http = factories.admin_key_create(tenant)
    return {
        "100%": {
            "principal": admin_keyed.principal,
            "token": admin_http.token,
            "rows": [i for i, r in enumerate(rows) if r.tenant == 0],
        },
        "5%": {
            "principal": app.principal,
            "token": app.token,
            "rows": [i for i, r in enumerate(rows) if r.tenant == 0 and r.project == five],
        },
        "0.1%": {
            "principal": run.principal,
            "token": run.token,
            "rows": [
                i
                for i, r in enumerate(rows)
                if r.tenant == 0
                and r.project == tenth[0]
                and (r.participant is None or r.participant == tenth[1])
            ],
        },
    }


class SqlTimer:
    """Time spent in the database (execute, which for psycopg's client-side cursors includes
    planning, execution and transfer) by the statements of one search."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.statements = 0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started
            self.statements += 1


def make_search(principal: Principal, mode: str, query: str, top_k: int = 10) -> FactSearch:
    return FactSearch(
        tenant_id=principal.tenant_id,
        readers=readers_for(principal),
        mode=mode,
        query=query,
        top_k=top_k,
    )


def exact(search: FactSearch, vector: list[float], model: str) -> list:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")  # HNSW cannot bitmap-scan: exact
        return fact_search_embedded(search=search, vector=vector, model=model)


def recall_at_10(approximate: list, exact_hits: list, *, by_score: bool) -> float:
    """The share of the exact top-10 the indexed path found. By score for semantic search: a
    hit as near as the exact 10th counts (equal texts have equal vectors, so ids may differ
    between equally good answers); by id for hybrid (fused scores are ranks, not distances)."""
    if not exact_hits:
        return 1.0
    if by_score:
        floor = exact_hits[-1].score - 1e-6
        return min(1.0, sum(1 for h in approximate if h.score >= floor) / len(exact_hits))
    want = {h.revision.pk for h in exact_hits}
    got = {h.revision.pk for h in approximate}
    return len(want & got) / len(want)


def http_client(args: tuple[str, str, list[tuple[str, str]], float]) -> tuple[int, list[float]]:
    url, token, bodies, seconds = args
    done = 0
    latencies = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        mode, query = bodies[i % len(bodies)]
        i += 1
        started = time.perf_counter()
        post(url, token, mode, query)
        latencies.append(time.perf_counter() - started)
        done += 1
    return done, latencies


def post(url: str, token: str, mode: str, query: str) -> dict:
    body = json.dumps({"mode": mode, "query": query, "top_k": 10}).encode()
    request = urllib.request.Request(  # noqa: S310 - our own local server
        url,
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        return json.loads(response.read())


def start_server(port: int, embedder: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **process_database_env(connection.get_connection_params(), settings.KINDMEM_APP_ROLE),
        "SECRET_KEY": "bench-search",
        "KINDMEM_EMBEDDER": embedder,
        "KINDMEM_EMBEDDER_THREADS": "1",
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
            "--timeout",
            "120",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--embed-threads", type=int, default=1, help="for the corpus, once")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--http-seconds", type=float, default=20.0)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--without-wall",
        action="store_true",
        help="time the SQL as the tables' owner, outside row security (for the wall's cost)",
    )
    parser.add_argument(
        "--embedder",
        choices=["local", "hashing"],
        default="local",
        help="hashing: a quick pipeline check without the model (not the benchmark)",
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated; keyword alone loads no vectors and builds no HNSW index",
    )
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    assert set(modes) <= set(MODES), modes
    keyword_only = modes == ["keyword"]
    results: dict = {
        "facts": args.facts,
        "seed": args.seed,
        "embedder": args.embedder,
        "row_security": not args.without_wall,
    }

    rows = generate(args.facts, args.seed)
    print(f"corpus: {len(rows):,} facts (seed {args.seed})", flush=True)
    vectors: np.ndarray | None
    if keyword_only:
        vectors, info = None, {"embedder": None}
    elif args.embedder == "local":
        vectors, info = corpus_vectors(
            [r.text for r in rows], args.seed, threads=args.embed_threads
        )
    else:
        from embeddings.providers import HashingEmbedder

        vectors = np.asarray(HashingEmbedder().embed([r.text for r in rows]), dtype=np.float32)
        info = {"cached": False, "embedder": "hashing"}
    results["corpus_embedding"] = info
    settings.EMBEDDER = args.embedder
    from embeddings.providers import get_embedder

    embedder = get_embedder()
    assert embedder is not None
    model = embedder.model
    suffix = "_keyword" if keyword_only else "" if args.embedder == "local" else "_hashing"
    use_bench_database(
        f"{DATABASE}_{args.facts}{suffix}", fresh=args.fresh, niceness=10, build_workers=0
    )
    if Fact.objects.count() != len(rows):
        print("loading ...", flush=True)
        results["load"] = load(rows, vectors, model)
        print(f"  {results['load']}", flush=True)
    results["sizes_mb"] = index_sizes()
    print(f"  sizes (MB): {results['sizes_mb']}", flush=True)
    readers = choose_readers(rows)
    total_rows = len(rows)

    # the queries: half keyword-style, half questions, each about a fact the reader can read
    rng = random.Random(args.seed)
    queries: dict[str, list[tuple[str, int]]] = {}
    for name, reader in readers.items():
        picks = [rng.choice(reader["rows"]) for _ in range(args.queries)]
        queries[name] = [
            (rows[i].keyword_query if k % 2 == 0 else rows[i].question, i)
            for k, i in enumerate(picks)
        ]
    texts = sorted({q for qs in queries.values() for q, _ in qs})
    query_vectors: dict[str, list[float]] = {}
    if not keyword_only:
        embedder.embed(["warm up"])
        single = []
        query_vectors = {}
        for text in texts:
            t = time.perf_counter()
            [query_vectors[text]] = embedder.embed([text])
            single.append(time.perf_counter() - t)
        results["query_embedding_ms"] = pct(single)
        print(f"query embedding (1 text, local model): {results['query_embedding_ms']}", flush=True)

    table = []
    results["sql"] = {}
    for name, reader in readers.items():
        principal = reader["principal"]
        readable = searchable(make_search(principal, "keyword", "x")).count()
        share = {
            "readable_rows": readable,
            "share_of_tenant": round(readable / len(readers["100%"]["rows"]), 5),
            "share_of_table": round(readable / total_rows, 5),
        }
        entry: dict = {**share}
        # as production's web process runs it: the app role, confined to the reader's tenant
        wall = nullcontext() if args.without_wall else tenant_context(principal.tenant_id)
        with wall:
            for mode in modes:
                measure_mode(entry, name, mode, principal, queries, query_vectors, rows, model)
        results["sql"][name] = entry
        table.append((name, entry))

    if not args.no_http:
        results["http"] = http_bench(args, readers, queries)

    wall = "" if not args.without_wall else "-without-wall"
    out = ROOT / "results" / f"search-{args.facts}{suffix}{wall}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print_table(results)
    print(f"wrote {out.relative_to(ROOT.parent)}")


def measure_mode(
    entry: dict,
    name: str,
    mode: str,
    principal: Principal,
    queries: dict[str, list[tuple[str, int]]],
    query_vectors: dict[str, list[float]],
    rows: list[Row],
    model: str,
) -> None:
    samples, sql_samples, recalls, found, hit_counts = [], [], [], 0, []
    for query, source in queries[name]:
        search = make_search(principal, mode, query)
        vector = query_vectors[query] if mode != "keyword" else None
        timer = SqlTimer()
        t = time.perf_counter()
        with connection.execute_wrapper(timer):
            hits = fact_search_embedded(search=search, vector=vector, model=model)
        samples.append(time.perf_counter() - t)
        sql_samples.append(timer.seconds)
        hit_counts.append(len(hits))
        source_text = rows[source].text
        found += any(h.revision.search_text == source_text for h in hits)
        if mode != "keyword":
            recalls.append(
                recall_at_10(hits, exact(search, vector, model), by_score=mode == "semantic")
            )
    entry[mode] = {
        **pct(sql_samples),
        "with_orm": pct(samples),
        "sql_statements": timer.statements,
        "mean_hits": round(statistics.mean(hit_counts), 1),
        "relevant_in_top10": round(found / len(queries[name]), 2),
    }
    if recalls:
        entry[mode]["recall_at_10_vs_exact"] = round(statistics.mean(recalls), 3)
    print(f"  sql {name:5} {mode:8} {entry[mode]}", flush=True)


def http_bench(args: argparse.Namespace, readers: dict, queries: dict) -> dict:
    url = f"http://127.0.0.1:{args.port}/v1/facts/search"
    server = start_server(args.port, args.embedder)
    out: dict = {}
    try:
        deadline = time.monotonic() + 120
        while True:  # wait for the server, and warm both workers' models
            try:
                for _ in range(6):
                    post(url, readers["100%"]["token"], "hybrid", "warm up")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "the server did not answer within 120 s"
                time.sleep(1)
        for name, reader in readers.items():
            for mode in MODES:
                samples = []
                for query, _ in queries[name]:
                    t = time.perf_counter()
                    post(url, reader["token"], mode, query)
                    samples.append(time.perf_counter() - t)
                out.setdefault(name, {})[mode] = pct(samples)
                print(f"  http {name:5} {mode:8} {out[name][mode]}", flush=True)
        # throughput: 2 client processes, hybrid, mixed readers
        bodies = [(name, q) for name in readers for q, _ in queries[name]]
        jobs = []
        for c in range(2):
            mine = bodies[c::2]
            token_of = {n: r["token"] for n, r in readers.items()}
            # one reader per client keeps the client simple; alternate the broad and narrow
            name = "100%" if c == 0 else "0.1%"
            jobs.append(
                (
                    url,
                    token_of[name],
                    [("hybrid", q) for n, q in mine if n == name] or [("hybrid", "coffee")],
                    args.http_seconds,
                )
            )
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            started = time.perf_counter()
            done = pool.map(http_client, jobs)
            elapsed = time.perf_counter() - started
        total = sum(d for d, _ in done)
        out["throughput_hybrid_2_clients_rps"] = round(total / elapsed, 1)
        out["throughput_latency_ms"] = pct([x for _, lat in done for x in lat])
        print(
            f"  http throughput (2 clients, hybrid): {out['throughput_hybrid_2_clients_rps']}"
            f" req/s, {out['throughput_latency_ms']}",
            flush=True,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    return out


def print_table(results: dict) -> None:
    print()
    print(f"facts: {results['facts']:,}  load: {results.get('load', '(kept)')}")
    print(f"sizes (MB): {results['sizes_mb']}")
    print(f"query embedding: {results.get('query_embedding_ms', '-')}")
    header = (
        f"{'reader':6} {'rows':>7} {'mode':8} {'SQL p50/p95/p99 ms':>22}"
        f" {'+ORM p50/p95/p99 ms':>22} {'recall@10':>9}"
    )
    if "http" in results:
        header += f" {'HTTP p50/p95/p99 ms':>22}"
    print(header)
    for name, entry in results["sql"].items():
        for mode in (m for m in MODES if m in entry):
            e = entry[mode]
            o = e["with_orm"]
            line = (
                f"{name:6} {entry['readable_rows']:>7} {mode:8} "
                f"{e['p50']:>6} /{e['p95']:>6} /{e['p99']:>6} "
                f"{o['p50']:>6} /{o['p95']:>6} /{o['p99']:>6} "
                f"{e.get('recall_at_10_vs_exact', '-'):>9}"
            )
            if "http" in results:
                h = results["http"][name][mode]
                line += f" {h['p50']:>6} /{h['p95']:>6} /{h['p99']:>6}"
            print(line)
    if "http" in results:
        print(
            f"throughput (2 clients, hybrid): {results['http']['throughput_hybrid_2_clients_rps']}"
            " req/s"
        )


if __name__ == "__main__":
    main()
