from __future__ import annotations

import json
import os
from datetime import timedelta

from django.utils import timezone

from kindmem.models import WorkerHeartbeat
from tests import factories


def test_healthz_reports_database_with_pgvector_and_broker(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["database"]["pgvector"].startswith("0.8")
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["embedder"]["provider"] in {"none", "local", "openai"}


def test_healthz_is_ok_with_a_fresh_heartbeat(client, db):
    factories.heartbeat_create()
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["checks"]["background"]["ok"] is True
    assert body["checks"]["background"]["last_heartbeat_seconds_ago"] <= 1


def test_healthz_is_degraded_not_down_when_the_heartbeat_is_stale(client, db, settings):
    # given a worker last seen past the stale age
    factories.heartbeat_create(
        seen_at=timezone.now() - timedelta(seconds=settings.HEARTBEAT_STALE_SECONDS + 5)
    )
    # when the web is asked
    response = client.get("/healthz")
    # then it still answers 200 and says background work is degraded, and why
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["status"] == "degraded"
    background = body["checks"]["background"]
    assert background["ok"] is False
    assert background["last_heartbeat_seconds_ago"] >= settings.HEARTBEAT_STALE_SECONDS


def test_healthz_is_degraded_not_down_when_the_broker_is_unreachable(client, db):
    from config.celery import app

    factories.heartbeat_create()
    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = original
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["checks"]["broker"]["ok"] is False


def test_healthz_reports_the_supervisors_processes(client, db, settings, tmp_path):
    # given a `kindmem run` (this process stands for it) whose worker died and is restarting
    settings.DATA_DIR = tmp_path
    factories.heartbeat_create()
    child = {"running": True, "pid": 1, "restarts": 0, "last_exit": None, "last_exit_at": None}
    dead = {**child, "running": False, "restarts": 2, "last_exit": "was killed by SIGKILL"}
    (tmp_path / "supervisor.json").write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "stopping": False,
                "children": {"web": child, "worker": {**dead, "last_exit_at": 1.0}},
            }
        )
    )
    # then /healthz names the dead one
    body = client.get("/healthz").json()
    assert body["status"] == "degraded"
    processes = body["checks"]["background"]["processes"]
    assert processes["worker"]["running"] is False
    assert processes["worker"]["last_exit"] == "was killed by SIGKILL"
    assert processes["web"]["running"] is True


def test_the_console_front_page_says_background_work_is_degraded(client, db, settings):
    # given staff, and a worker last seen past the stale age
    staff = factories.user_create(factories.tenant_create())
    staff.is_staff = True
    staff.save()
    client.force_login(staff)
    factories.heartbeat_create(
        seen_at=timezone.now() - timedelta(seconds=settings.HEARTBEAT_STALE_SECONDS + 5)
    )
    # when the front page is opened, then it says so, with the heartbeat's age
    page = client.get("/console/").content.decode()
    assert '<strong class="degraded">Degraded</strong>' in page
    assert "worker heartbeat" in page
    # and with a fresh heartbeat it says background work runs
    WorkerHeartbeat.objects.update(seen_at=timezone.now())
    page = client.get("/console/").content.decode()
    assert 'id="background-work"' in page
    assert "Degraded" not in page
