"""The API's JSON rendering: DRF's JSONRenderer (json.dumps) against the renderer the API
uses (config/settings.py), on real search responses from bench/peers.py's database.

    .venv/bin/python bench/peers.py         # once: loads the database
    .venv/bin/python bench/render_json.py   # top_k 10 and 100, 2,000 renders each

Prints p50 microseconds per render for each renderer and the ratio, and checks that both give
the same JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402

from api.renderers import ApiJSONRenderer  # noqa: E402
from bench._database import use_bench_database  # noqa: E402
from bench.peers import DATABASE  # noqa: E402
from bench.peers_data import user_name  # noqa: E402

RENDERS = 2000


def p50_us(render, body: object) -> float:
    samples = []
    for _ in range(RENDERS):
        started = time.perf_counter()
        render(body)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def main() -> None:
    settings.EMBEDDER = "local"
    settings.ALLOWED_HOSTS = ["*"]
    use_bench_database(DATABASE, fresh=False)
    from kindmem.models import Project
    from tests import factories

    project = Project.objects.get(name="peers-project")
    app = factories.app_key_create(project.tenant, [project])
    client = Client()
    drf, orjson_renderer = JSONRenderer(), ApiJSONRenderer()
    for top_k in (10, 100):
        # the project-wide key reads every user's facts: a full page of hits either way
        response = client.post(
            "/v1/facts/search",
            data=json.dumps(
                {"mode": "semantic", "query": f"what {user_name(3)} likes", "top_k": top_k}
            ),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {app.token}",
        )
        assert response.status_code == 200, response.content
        body = response.json()
        assert json.loads(drf.render(body)) == json.loads(orjson_renderer.render(body))
        slow, fast = p50_us(drf.render, body), p50_us(orjson_renderer.render, body)
        print(
            f"top_k {top_k:3} ({len(response.content):,} bytes, {len(body['hits'])} hits):"
            f" JSONRenderer {slow:7.1f} us, ApiJSONRenderer {fast:6.1f} us, x{slow / fast:.1f}"
        )


if __name__ == "__main__":
    main()
