"""What one of the request's cuts buys, the request with it and without it alternating one by
one in one process, on bench/peers.py's database (load it first with bench/peers.py).

    .venv/bin/python bench/request_ab.py vector      # a search's query vector: binary or text
    .venv/bin/python bench/request_ab.py read-back   # a write's response read in its round trip
    .venv/bin/python bench/request_ab.py dedup       # the write's dedup lookup by scope size
    .venv/bin/python bench/request_ab.py prepared    # searches without prepared statements
    .venv/bin/python bench/request_ab.py psycopg-parse  # psycopg's parse cache bounds raised
    .venv/bin/python bench/request_ab.py engine      # compiled shapes against the plain ORM

- `vector`: `fact_search_embedded` (semantic, top-10, a user's run, the vector given), its
  prepared statement sent with the vector in pgvector's binary form (compiled) or as
  text (the dumper the connection had before), alternating per search; p50 ms of each.
- `read-back`: `POST /v1/facts` through Django's test client (an app key, the local model
  embedding on write), the written revision read back in the round trip that wrote it or in one
  of its own (`write_revision(read_back=None)`), alternating per write; p50 ms of each.
- `dedup`: the dedup lookup a write makes (the current revision of the same content in the
  writer's scope), its planning and execution on the server (EXPLAIN ANALYZE, median of 7),
  with the writer's scope grown to n facts, with the content index (revision_current_content)
  and without it; in a transaction rolled back, so the database is left as it was.
- `prepared`: `fact_search_embedded` (semantic, hybrid and keyword in turn, a user's run, the
  vector given) with the connection's prepared statements on and off (what PgBouncer 1.18 and
  KINDMEM_TRANSACTION_POOLING leave: one message of several plain statements), alternating per
  search; p50 ms of each and the ratio.
- `psycopg-parse`: semantic and hybrid searches (as the connection runs them) with psycopg's
  cache of parsed queries at its own bounds (4 KB, 50 parameters: the compiled searches are
  larger, so each call parses again) and raised to 64 KB and 1,024 parameters, what
  kindmem's engine did by patching psycopg's private `_queries` until issue 29 (this bench
  still sets them, to measure what was given up); p50 ms of each.
- `engine`: whole requests through Django's test client (a user's run searching semantic and
  hybrid, an app key writing), with the compiled shapes, pipelines and prepared statements, and
  with every query built by the ORM on each call (client-side binding, or server-side binding
  with psycopg's `prepare_threshold`), alternating per request; p50 and p90 ms of each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, connections  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench.peers import DATABASE  # noqa: E402
from bench.peers_data import WRITER_PREFIX, forget_writes, plain_connect, user_name  # noqa: E402


def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def vector(rounds: int) -> None:
    from pgvector import Vector

    from compiled.statements import VectorDumper, VectorTextDumper
    from embeddings.providers import embed_query
    from facts.search import FactSearch, fact_search_embedded
    from kindmem.access import readers_for
    from kindmem.row_security import tenant_context

    runs = _runs(20)
    vec, model = embed_query("what does the user like to eat")
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regtype('vector')::oid")
        [oid] = cursor.fetchone()
    binary = type("", (VectorDumper,), {"oid": oid})
    samples: dict[str, list[float]] = {"binary": [], "text": []}
    for i in range(rounds + 50):
        side = ("binary", "text")[i % 2]
        principal = runs[i % len(runs)].principal
        search = FactSearch(
            tenant_id=principal.tenant_id,
            readers=readers_for(principal),
            mode="semantic",
            query="",
            top_k=10,
        )
        with tenant_context(principal.tenant_id):
            # the last dumper registered for a class is the one `%s` uses
            dumper = binary if side == "binary" else VectorTextDumper
            connection.connection.adapters.register_dumper(Vector, dumper)
            started = time.perf_counter()
            fact_search_embedded(search=search, vector=vec, model=model)
            if i >= 50:
                samples[side].append(time.perf_counter() - started)
    print({side: p50_ms(s) for side, s in samples.items()}, "ms p50, fact_search_embedded")


def prepared_off(rounds: int) -> None:
    """Behind PgBouncer 1.18 (KINDMEM_TRANSACTION_POOLING) no statement is prepared: the same
    searches with the connection's prepared statements on and off, alternating."""
    from embeddings.providers import embed_query
    from facts.search import FactSearch, fact_search_embedded
    from kindmem.access import readers_for
    from kindmem.row_security import tenant_context

    runs = _runs(20)
    queries = ["what does the user like to eat", "which city does she live in", "tea or coffee"]
    vectors = [embed_query(q) for q in queries]
    samples: dict[str, list[float]] = {}
    raw = connection.connection
    for i in range(rounds + 60):
        side = ("prepared", "plain")[i % 2]
        mode = ("semantic", "hybrid", "keyword")[(i // 2) % 3]
        principal = runs[i % len(runs)].principal
        query, (vec, model) = queries[i % 3], vectors[i % 3]
        search = FactSearch(
            tenant_id=principal.tenant_id,
            readers=readers_for(principal),
            mode=mode,
            query=query,
            top_k=10,
        )
        raw.prepare_threshold = 5 if side == "prepared" else None
        with tenant_context(principal.tenant_id):
            started = time.perf_counter()
            fact_search_embedded(search=search, vector=vec, model=model)
            if i >= 60:
                samples.setdefault(f"{mode} {side}", []).append(time.perf_counter() - started)
    raw.prepare_threshold = 5
    for mode in ("semantic", "hybrid", "keyword"):
        on, off = p50_ms(samples[f"{mode} prepared"]), p50_ms(samples[f"{mode} plain"])
        print(f"{mode}: prepared {on} ms, plain {off} ms p50 (plain/prepared {off / on:.2f})")


def psycopg_parse(rounds: int) -> None:
    """The searches with psycopg's parse cache at its own bounds and raised, alternating."""
    from psycopg import _queries  # measured here, patched nowhere in kindmem

    from embeddings.providers import embed_query
    from facts.search import FactSearch, fact_search_embedded
    from kindmem.access import readers_for
    from kindmem.row_security import tenant_context

    bounds = {
        "psycopg's own": (
            _queries.MAX_CACHED_STATEMENT_LENGTH,
            _queries.MAX_CACHED_STATEMENT_PARAMS,
        ),
        "raised": (64 * 1024, 1024),
    }
    runs = _runs(20)
    queries = ["what does the user like to eat", "which city does she live in", "tea or coffee"]
    vectors = [embed_query(q) for q in queries]
    samples: dict[str, list[float]] = {}
    for i in range(rounds + 60):
        side = ("psycopg's own", "raised")[i % 2]
        _queries.MAX_CACHED_STATEMENT_LENGTH, _queries.MAX_CACHED_STATEMENT_PARAMS = bounds[side]
        mode = ("semantic", "hybrid")[(i // 2) % 2]
        principal = runs[i % len(runs)].principal
        query, (vec, model) = queries[i % 3], vectors[i % 3]
        search = FactSearch(
            tenant_id=principal.tenant_id,
            readers=readers_for(principal),
            mode=mode,
            query=query,
            top_k=10,
        )
        with tenant_context(principal.tenant_id):
            started = time.perf_counter()
            fact_search_embedded(search=search, vector=vec, model=model)
            if i >= 60:
                samples.setdefault(f"{mode} {side}", []).append(time.perf_counter() - started)
    (
        _queries.MAX_CACHED_STATEMENT_LENGTH,
        _queries.MAX_CACHED_STATEMENT_PARAMS,
    ) = bounds["psycopg's own"]
    for mode in ("semantic", "hybrid"):
        own, raised = p50_ms(samples[f"{mode} psycopg's own"]), p50_ms(samples[f"{mode} raised"])
        print(f"{mode}: psycopg's bounds {own} ms, raised {raised} ms p50 (+{own - raised:.2f} ms)")


def read_back(rounds: int) -> None:
    from django.test import Client

    import facts.create as services  # fact_create's module: its write_revision is swapped
    from kindmem.models import Project
    from tests import factories

    settings.ALLOWED_HOSTS = ["*"]
    project = Project.objects.get(name="peers-project")
    # a credential per side: each within the write rate (KINDMEM_WRITE_RATE)
    tokens = [factories.app_key_create(project.tenant, [project]).token for _ in range(2)]
    written_by = services.write_revision

    def apart(*args: Any, **kwargs: Any) -> Any:
        return written_by(*args, **{**kwargs, "read_back": None})

    client = Client()
    samples: dict[str, list[float]] = {"in its round trip": [], "apart": []}
    for i in range(rounds + 20):
        side = list(samples)[i % 2]
        services.write_revision = written_by if i % 2 == 0 else apart
        body = {
            "type": "note",
            "content": f"note {i} {time.time()} about the garden",
            "scope": {"project_id": str(project.id), "participant_id": f"{WRITER_PREFIX}{i % 50}"},
        }
        started = time.perf_counter()
        response = client.post(
            "/v1/facts",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {tokens[i % 2]}",
        )
        seconds = time.perf_counter() - started
        assert response.status_code == 201, response.content
        if i >= 20:
            samples[side].append(seconds)
    services.write_revision = written_by
    forget_writes(plain_connect())
    print({side: p50_ms(s) for side, s in samples.items()}, "ms p50, POST /v1/facts")


def dedup(sizes: list[int]) -> None:
    from django.test.utils import CaptureQueriesContext

    from facts import services
    from kindmem.models import Project
    from kindmem.row_security import tenant_context
    from tests import factories

    project = Project.objects.get(name="peers-project")
    app = factories.app_key_create(project.tenant, [project])
    writer = f"{WRITER_PREFIX}dedup"
    with tenant_context(project.tenant_id), CaptureQueriesContext(connection) as sent:
        services.fact_create(
            principal=app.principal,
            type="note",
            content="a note the dedup looks for",
            scope={"project_id": str(project.id), "participant_id": writer},
        )
    [lookup] = [q["sql"] for q in sent.captured_queries if '"content_hash" = ' in q["sql"]]
    raw = connection.connection

    def server_ms(cursor: Any) -> float:
        times = []
        for _ in range(7):
            cursor.execute("EXPLAIN (ANALYZE, SUMMARY) " + lookup)
            out = "\n".join(row[0] for row in cursor.fetchall())
            times.append(
                float(re.search(r"Planning Time: ([\d.]+)", out).group(1))
                + float(re.search(r"Execution Time: ([\d.]+)", out).group(1))
            )
        return statistics.median(times)

    for n in sizes:
        with raw.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(
                "UPDATE facts_fact SET participant_id = %s WHERE id IN (SELECT id FROM"
                " facts_fact WHERE participant_id LIKE 'user-%%' LIMIT %s)",
                [writer, n],
            )
            cursor.execute("ANALYZE facts_fact")
            indexed = server_ms(cursor)
            cursor.execute("DROP INDEX revision_current_content")
            scanned = server_ms(cursor)
            cursor.execute("ROLLBACK")
        print(
            f"{n + 1:6,} facts in the writer's scope: {indexed:6.2f} ms with the content index,"
            f" {scanned:6.2f} ms without"
        )
    forget_writes(plain_connect())  # the probe fact


def engine(rounds: int) -> None:
    """Whole requests through Django's test client with compiled's shapes,
    pipelines and prepared statements (`engine`), against the same code with every query built
    by the ORM on each call: with Django's client-side binding (`orm`), and with server-side
    binding and psycopg's `prepare_threshold` (`orm-prepared`), alternating per request."""
    from django.db.backends.postgresql.base import Cursor, ServerBindingCursor
    from django.test import Client

    import compiled as engine_api
    from kindmem.models import Project
    from tests import factories

    settings.ALLOWED_HOSTS = ["*"]
    settings.QUERY_CACHE_SIZE = 64  # the search's embedding is not what is measured here
    project = Project.objects.get(name="peers-project")
    sides = ("engine", "orm", "orm-prepared")
    tokens = {s: factories.app_key_create(project.tenant, [project]).token for s in sides}
    runs = _runs(20)
    # the engine's own functions, replaced on the ORM's sides by ones that send every query
    # and INSERT through the ORM (measured here, patched nowhere in kindmem)
    template, insert_statement, preparing = (
        engine_api.template_of,
        engine_api.compile_insert,
        engine_api.preparing,
    )
    queries = ["what does the user like to eat", "which city does she live in", "tea or coffee"]
    client = Client()
    samples: dict[str, list[float]] = {}
    for i in range(rounds + 60):
        side = sides[i % 3]
        what = ("semantic", "hybrid", "write")[(i // 3) % 3]
        connection.ensure_connection()
        raw = connection.connection
        if side == "engine":
            engine_api.template_of, engine_api.compile_insert = template, insert_statement
            engine_api.preparing = preparing
            raw.cursor_factory, raw.prepare_threshold = Cursor, 5
        else:
            engine_api.template_of = lambda key, build, inputs: (None, [])
            engine_api.compile_insert = lambda group: None
            engine_api.preparing = lambda: False
            raw.cursor_factory = ServerBindingCursor if side == "orm-prepared" else Cursor
            raw.prepare_threshold = 5 if side == "orm-prepared" else None
        if what == "write":
            path = "/v1/facts"
            body: dict[str, Any] = {
                "type": "note",
                "content": f"note {i} {time.time()} about the garden",
                "scope": {
                    "project_id": str(project.id),
                    "participant_id": f"{WRITER_PREFIX}{i % 50}",
                },
            }
            token, expected = tokens[side], 201
        else:
            path = "/v1/facts/search"
            body = {"mode": what, "query": queries[i % 3], "top_k": 10}
            token, expected = runs[i % len(runs)].token, 200
        started = time.perf_counter()
        response = client.post(
            path,
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        seconds = time.perf_counter() - started
        assert response.status_code == expected, response.content
        if i >= 60:
            samples.setdefault(f"{what} {side}", []).append(seconds)
    engine_api.template_of, engine_api.compile_insert = template, insert_statement
    engine_api.preparing = preparing
    forget_writes(plain_connect())
    for what in ("semantic", "hybrid", "write"):
        figures = {side: samples[f"{what} {side}"] for side in sides}
        base = p50_ms(figures["engine"])
        print(
            f"{what}: "
            + ", ".join(
                f"{side} p50 {p50_ms(s)} p90 {round(sorted(s)[int(len(s) * 0.9)] * 1000, 3)}"
                f" ({p50_ms(s) - base:+.3f})"
                for side, s in figures.items()
            ),
            flush=True,
        )


def _runs(users: int) -> list[Any]:
    from kindmem.models import Project
    from tests import factories

    project = Project.objects.get(name="peers-project")
    app = factories.app_key_create(project.tenant, [project])
    return [
        factories.run_create(app, project, participant_id=user_name(u), thread_id=None)
        for u in range(users)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what",
        choices=["vector", "read-back", "dedup", "prepared", "psycopg-parse", "engine"],
    )
    parser.add_argument("--rounds", type=int, default=1000, help="requests, both sides together")
    parser.add_argument("--sizes", default="100,1000,9000", help="dedup: facts in the scope")
    args = parser.parse_args()
    settings.EMBEDDER = "local"
    settings.QUERY_CACHE_SIZE = 0
    use_bench_database(DATABASE, fresh=False)
    # the throttle's own connection, on the same database (config/settings_database.py)
    connections["cache"].settings_dict["NAME"] = connection.settings_dict["NAME"]
    from config.collector import tune_for_serving

    tune_for_serving()
    if args.what == "vector":
        vector(args.rounds)
    elif args.what == "prepared":
        prepared_off(args.rounds)
    elif args.what == "psycopg-parse":
        psycopg_parse(args.rounds)
    elif args.what == "read-back":
        read_back(args.rounds)
    elif args.what == "engine":
        engine(args.rounds)
    else:
        dedup([int(n) for n in args.sizes.split(",")])


if __name__ == "__main__":
    main()
