"""/metrics (config/metrics.py): behind its own credential, counters that move as the requests
did (in this process and summed over gunicorn's workers), no tenant or person in any label,
and the state gauges the worker refreshes."""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from typing import Any

import pytest
from celery.signals import task_success
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from config.metrics import registry
from config.tasks import refresh_metrics
from tests import factories
from tests.approvals.conftest import declare
from tests.processes import web_server

pytestmark = pytest.mark.django_db

TOKEN = "metrics-secret-for-tests"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def metrics_on(settings: Any) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Each sample of metric `name` in a scrape, by its sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def scrape(client: Any) -> str:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def requests_by(text: str) -> Counter[tuple[str, str, str]]:
    counted: Counter[tuple[str, str, str]] = Counter()
    for labels, value in samples(text, "kindmem_http_requests_total").items():
        label = dict(labels)
        counted[(label["route"], label["status"], label["credential"])] += int(value)
    return counted


def test_metrics_are_not_served_without_their_credential(client, world, settings) -> None:
    # given: no metrics credential configured: not served at all
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    # given: one configured
    settings.METRICS_TOKEN = TOKEN
    # then: none, a wrong one, or an API key of the tenant's are all 401 in the error shape
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer nope"}, world.admin.headers):
        response = client.get("/metrics", **headers)
        assert response.status_code == 401
        assert response.json()["code"] == "unauthenticated"
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_request_counters_move_as_the_requests_did(api, client, world, metrics_on) -> None:
    # given: a scrape before
    before = requests_by(scrape(client))
    run = factories.run_create(world.app, world.project, participant_id="p-9")

    # when: a burst of requests with each credential kind, some refused
    for _ in range(5):
        assert api.get("/v1/facts", **world.app.headers).status_code == 200
    for _ in range(3):
        assert api.get("/v1/me", **run.headers).status_code == 200
    for _ in range(4):
        assert api.get("/v1/facts", HTTP_AUTHORIZATION="Bearer kmk_made_up").status_code == 401
    missing = "00000000-0000-0000-0000-000000000000"
    assert api.get(f"/v1/facts/{missing}", **world.admin.headers).status_code == 404

    # then: the counters moved by exactly those requests, by route pattern and credential kind
    after = requests_by(scrape(client))
    moved = after - before
    assert moved[("v1/facts", "200", "app")] == 5
    assert moved[("v1/me", "200", "run")] == 3
    assert moved[("v1/facts", "401", "none")] == 4
    assert moved[("v1/facts/<str:fact_id>", "404", "admin")] == 1
    # and the latency histogram counted them too
    latency = samples(scrape(client), "kindmem_http_request_duration_seconds_count")
    assert latency[(("method", "GET"), ("route", "v1/facts"))] >= 9


def test_no_tenant_person_or_id_is_ever_a_label(api, client, world, metrics_on) -> None:
    # given: requests naming facts, people and runs
    run = factories.run_create(world.app, world.project, participant_id="person-secret-42")
    api.get(f"/v1/facts/{world.tenant.id}", **run.headers)
    api.get("/v1/facts?participant_id=person-secret-42", **world.app.headers)
    # then: the scrape holds no id and no person
    text = scrape(client)
    assert not UUID.search(text)
    assert "person-secret-42" not in text
    assert str(world.tenant.name) not in text


def test_refresh_counts_the_review_queue_and_erasures_over_every_tenant(
    api, client, world, other_world, metrics_on
) -> None:
    # given: a memory waiting for review in each of two tenants
    for each in (world, other_world):
        declare(each.agent)
        run = factories.run_create(each.app, each.project, participant_id="p-1")
        response = api.post(
            "/v1/remember",
            {"type": "preference", "text": "Always refund.", "tool_call_id": "c-1"},
            format="json",
            **run.headers,
        )
        assert response.json()["approval_id"], response.json()

    # when: the worker's refresh runs
    refresh_metrics()

    # then: the gauges count both tenants, with no tenant label
    text = scrape(client)
    assert samples(text, "kindmem_review_pending") == {(): 2.0}
    assert samples(text, "kindmem_review_oldest_pending_age_seconds")[()] >= 0
    assert samples(text, "kindmem_erasures_in_progress") == {(): 0.0}
    assert samples(text, "kindmem_state_refreshed_timestamp_seconds")[()] > 0
    assert samples(text, "kindmem_webhook_deliveries")[(("status", "pending"),)] == 0.0


def test_metrics_off_counts_nothing_and_serves_nothing(world, settings) -> None:
    # given: what this process has counted so far, then metrics turned off (KINDMEM_METRICS)
    settings.METRICS_TOKEN = TOKEN
    before = generate_latest(registry()).decode()
    settings.METRICS = False

    # when: requests (a new client: Django builds its middleware stack per handler), a task's
    # outcome and the worker's state refresh
    off = APIClient()
    for _ in range(3):
        assert off.get("/v1/facts", **world.app.headers).status_code == 200
    task_success.send(sender=refresh_metrics)
    refresh_metrics()

    # then: /metrics is not served, and no request, task or state was counted
    assert off.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404
    after = generate_latest(registry()).decode()
    assert requests_by(after) == requests_by(before)
    for name in ("kindmem_celery_tasks_total", "kindmem_state_refreshed_timestamp_seconds"):
        assert samples(after, name) == samples(before, name)


def test_gunicorns_workers_counts_add_up_in_one_scrape(world, tmp_path) -> None:
    # given: the web process as production runs it (gunicorn, 2 workers) counting in files
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "KINDMEM_METRICS_TOKEN": TOKEN}
    with web_server(env=env) as base:

        def get(path: str, token: str | None = None) -> str:
            request = urllib.request.Request(base + path)  # noqa: S310 - the test server
            if token:
                request.add_header("Authorization", f"Bearer {token}")
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.read().decode()

        before = requests_by(get("/metrics", TOKEN))
        # when: a burst of 40 requests, which the two workers share (not /healthz, which the
        # server's start-up probe may still be asking)
        for _ in range(40):
            get("/v1/schema")
        # then: every scrape (whichever worker answers it) counts all 40
        for _ in range(4):
            moved = requests_by(get("/metrics", TOKEN)) - before
            assert moved[("v1/schema", "200", "none")] == 40, moved
