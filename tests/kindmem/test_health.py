from __future__ import annotations


def test_healthz_reports_database_with_pgvector_and_broker(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["database"]["pgvector"].startswith("0.8")
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["embedder"]["provider"] in {"none", "local", "openai"}


def test_healthz_is_503_when_the_broker_is_unreachable(client, db, settings):
    from kindmem.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = original
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["ok"] is False
