"""What the audit stream costs: p50/p95 latency and sequential throughput of audited endpoints,
with auditing on and with `audit_record` replaced by a no-op, alternating rounds so the
machine's noise falls on both alike.

    .venv/bin/python bench/audit_overhead.py [--facts 2000] [--requests 300] [--rounds 4]

Runs in-process through Django's test client against a throwaway test database on the
embedded PostgreSQL (created and dropped by the script).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

import audit.recording  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def seed(facts: int) -> tuple[dict[str, str], list[tuple[str, str, dict | None]]]:
    from facts.services import fact_create
    from tests import factories

    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    factories.agent_create(tenant)
    app = factories.app_key_create(tenant, [project])
    for i in range(facts):
        fact_create(
            principal=app.principal,
            type="preference",
            content={"text": f"participant {i % 50} likes item {i} and colour {i % 7}"},
            scope={"project_id": project.id, "participant_id": f"p-{i % 50}"},
        )
    calls = [
        ("get", "/v1/facts?limit=20", None),
        ("get", "/v1/facts?limit=20&participant_id=p-3", None),
    ]
    if any(str(p.pattern) == "facts/search" for p in _facts_patterns()):
        calls.append(
            ("post", "/v1/facts/search", {"mode": "keyword", "query": "likes colour", "top_k": 10})
        )
    return {"HTTP_AUTHORIZATION": f"Bearer {app.token}"}, calls


def _facts_patterns() -> list:
    from facts import urls

    return list(urls.urlpatterns)


def run_round(client: APIClient, headers: dict, calls: list, requests: int) -> list[float]:
    latencies = []
    for i in range(requests):
        method, url, body = calls[i % len(calls)]
        start = time.perf_counter()
        if body is None:
            response = getattr(client, method)(url, **headers)
        else:
            response = getattr(client, method)(url, body, format="json", **headers)
        latencies.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.content[:300]
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    setup_test_environment()
    settings.DATABASE_ROUTERS = []
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        headers, calls = seed(args.facts)
        client = APIClient()
        real = audit.recording.audit_record
        results: dict[str, list[float]] = {"on": [], "off": []}
        walls: dict[str, float] = {"on": 0.0, "off": 0.0}
        run_round(client, headers, calls, 50)  # warm up
        # As config.wsgi does once a web worker has loaded: what exists now is never garbage,
        # so the collector's full passes stop rescanning it (they were 100-300 ms pauses that
        # landed on whichever mode allocated more).
        gc.collect()
        gc.freeze()
        for _ in range(args.rounds):
            for mode in ("on", "off"):
                audit.recording.audit_record = real if mode == "on" else (lambda **_: None)
                start = time.perf_counter()
                results[mode] += run_round(client, headers, calls, args.requests)
                walls[mode] += time.perf_counter() - start
        audit.recording.audit_record = real
        total = args.requests * args.rounds
        print(f"{total} requests per mode over {len(calls)} endpoints, {args.facts} facts")
        for mode in ("off", "on"):
            lat = results[mode]
            print(
                f"audit {mode:3}: p50 {statistics.median(lat):6.2f} ms  "
                f"p95 {percentile(lat, 0.95):6.2f} ms  {total / walls[mode]:7.1f} req/s"
            )
        for index, (method, url, _) in enumerate(calls):
            cells = []
            for mode in ("off", "on"):
                lat = results[mode][index :: len(calls)]
                cells.append(
                    f"{mode} p50 {statistics.median(lat):6.2f} mean {statistics.mean(lat):6.2f}"
                )
            print(f"  {method.upper():4} {url[:40]:40} " + " | ".join(cells))
        p50_on, p50_off = statistics.median(results["on"]), statistics.median(results["off"])
        print(
            f"overhead: p50 {(p50_on / p50_off - 1) * 100:+.1f}%, "
            f"throughput {(walls['off'] / walls['on'] - 1) * 100:+.1f}%"
        )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
