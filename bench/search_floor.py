"""The least an in-process kindmem search can cost beside the plain pgvector table: its parts
timed one by one, in one run, on bench/peers.py's database.

    .venv/bin/python bench/peers.py           # once: loads the database (10k facts, 100 users)
    .venv/bin/python bench/search_floor.py    # 300 user-scoped semantic searches, top-10

For each search (a distinct question, a user's run token, the same MiniLM on ONNX Runtime):

- the query's embedding (the plain table's and kindmem's alike);
- the plain table's query: its round trip, and its planning and execution on the server;
- kindmem's: the row-security context entered and left (two round trips), the guarded query's
  planning and execution on the server (the reader guard, holds and subjects in one statement,
  planned for the reader's values), one round trip, and `fact_search_embedded` whole (the
  query, its rows made into models with their subjects);
- the floor: embedding + context + the guarded query on the server + one round trip, that is
  kindmem with no Python of its own at all, as a multiple of the plain table's search.

Server times are read from `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY)` of each statement as it
was sent (run after it; the rows are the same). It prints p50s and writes
bench/results/search-floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
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
from bench.peers import DATABASE, TOP_K, Plain  # noqa: E402
from bench.peers_data import generate, is_loaded, plain_connect, user_name  # noqa: E402

ROOT = Path(__file__).resolve().parent


def server_ms(cursor: psycopg.Cursor, sql: str) -> float:
    """Planning + execution of `sql` (literal values), as the server reports them."""
    cursor.execute("EXPLAIN (ANALYZE, TIMING OFF, SUMMARY) " + sql)
    out = "\n".join(row[0] for row in cursor.fetchall())
    planning = float(re.search(r"Planning Time: ([\d.]+)", out).group(1))
    execution = float(re.search(r"Execution Time: ([\d.]+)", out).group(1))
    return planning + execution


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--facts-per-user", type=int, default=100)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()

    settings.EMBEDDER = "local"
    settings.QUERY_CACHE_SIZE = 0  # every question embedded, as in bench/peers.py
    from embeddings.providers import embed_query, get_embedder
    from facts.search import FactSearch, fact_search_embedded
    from kindmem.access import readers_for
    from kindmem.models import Project
    from kindmem.row_security import tenant_context
    from tests import factories

    embedder = get_embedder()
    assert embedder is not None
    use_bench_database(DATABASE, fresh=False)
    plain_db = plain_connect()
    rows = generate(args.users, args.facts_per_user, args.seed)
    if not is_loaded(plain_db, len(rows)):
        raise SystemExit("run bench/peers.py first: it loads the database this reads")
    project = Project.objects.get(name="peers-project")
    app = factories.app_key_create(project.tenant, [project])
    runs = {
        u: factories.run_create(app, project, participant_id=user_name(u), thread_id=None)
        for u in range(args.users)
    }
    plain = Plain(plain_db, embedder)
    # spread over the users, each question about one of its user's facts, distinct texts
    spread = rows[:: max(1, len(rows) // args.searches)][: args.searches]
    questions = [(user, f"{q} ({i})") for i, (user, _, q) in enumerate(spread)]
    embedder.embed(["warm up"])

    parts: dict[str, list[float]] = {
        k: []
        for k in (
            "embedding",
            "plain_round_trip",
            "plain_server",
            "context_in_and_out",
            "guarded_server",
            "round_trip",
            "fact_search_embedded",
        )
    }
    plain_server = psycopg.ClientCursor(plain_db)
    for i, (user, question) in enumerate(questions):
        started = time.perf_counter()
        vector, model = embed_query(question)
        parts["embedding"].append(time.perf_counter() - started)
        q = np.asarray(vector, dtype=np.float32)

        params = {"q": q, "user": user_name(user), "k": TOP_K}
        started = time.perf_counter()
        plain.db.execute(Plain.SEARCH, params).fetchall()
        parts["plain_round_trip"].append(time.perf_counter() - started)
        parts["plain_server"].append(
            server_ms(plain_server, plain_server.mogrify(Plain.SEARCH, params)) / 1000
        )

        principal = runs[user].principal
        search = FactSearch(
            tenant_id=principal.tenant_id,
            readers=readers_for(principal),
            mode="semantic",
            query=question,
            top_k=TOP_K,
        )
        started = time.perf_counter()
        with tenant_context(principal.tenant_id):
            pass
        parts["context_in_and_out"].append(time.perf_counter() - started)
        sent: list[tuple[str, Any]] = []

        def capture(execute, sql, params, many, context, sent=sent):
            sent.append((sql, params))
            return execute(sql, params, many, context)

        with tenant_context(principal.tenant_id):
            started = time.perf_counter()
            fact_search_embedded(search=search, vector=vector, model=model)
            parts["fact_search_embedded"].append(time.perf_counter() - started)
            with connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute("SELECT 1")
                cursor.fetchall()
                parts["round_trip"].append(time.perf_counter() - started)
            with connection.execute_wrapper(capture):
                fact_search_embedded(search=search, vector=vector, model=model)
            literal = psycopg.ClientCursor(connection.connection)
            parts["guarded_server"].append(
                sum(server_ms(literal, literal.mogrify(sql, ps)) for sql, ps in sent) / 1000
            )
        if i % 50 == 0:
            print(f"  {i}/{len(questions)}", flush=True)

    p50 = {k: round(percentiles_ms(v)[50], 3) for k, v in parts.items()}
    plain_search = p50["embedding"] + p50["plain_round_trip"]
    floor = p50["embedding"] + p50["context_in_and_out"] + p50["guarded_server"] + p50["round_trip"]
    kindmem = p50["embedding"] + p50["context_in_and_out"] + p50["fact_search_embedded"]
    results = {
        "searches": len(questions),
        "load_average": os.getloadavg(),
        "p50_ms": p50,
        "plain_search_ms": round(plain_search, 2),
        "kindmem_in_process_ms": round(kindmem, 2),
        "floor_ms": round(floor, 2),
        "kindmem_over_plain": round(kindmem / plain_search, 2),
        "floor_over_plain": round(floor / plain_search, 2),
    }
    print(f"p50 ms of {len(questions)} searches:")
    for name, value in p50.items():
        print(f"  {name:24} {value:8.3f}")
    print(f"plain search (embedding + round trip)      {plain_search:8.2f}")
    print(
        f"kindmem in-process (sum of its p50s)       {kindmem:8.2f}  x{kindmem / plain_search:.2f}"
    )
    print(f"floor (no Python of kindmem's at all)      {floor:8.2f}  x{floor / plain_search:.2f}")
    out = ROOT / "results" / "search-floor.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
