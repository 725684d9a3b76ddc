from __future__ import annotations

import gzip
import json
import time

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.renderers import ApiJSONRenderer
from config.durability import database_problems
from kindmem.models import Run


@pytest.fixture
def tight_write_rate(settings):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    rates = {"writes": "2/min"}
    original = SimpleRateThrottle.THROTTLE_RATES
    SimpleRateThrottle.THROTTLE_RATES = rates
    cache.clear()
    yield
    SimpleRateThrottle.THROTTLE_RATES = original
    api_settings.reload()
    cache.clear()


def test_writes_past_the_credentials_rate_get_429_with_retry_after(api, world, tight_write_rate):
    body = {"agent_id": "support-bot", "project_id": str(world.project.id)}
    for _ in range(2):
        assert api.post("/v1/runs", body, format="json", **world.app.headers).status_code == 201
    # when the third write of the minute arrives
    refused = api.post("/v1/runs", body, format="json", **world.app.headers)
    # then it is refused, says when to come back, and writes nothing
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate-limited"
    assert int(refused["Retry-After"]) > 0
    assert Run.objects.count() == 2
    # and another credential has its own budget; reads are not throttled
    assert api.post("/v1/runs", body, format="json", **world.user_key.headers).status_code == 201
    assert api.get("/v1/me", **world.app.headers).status_code == 200


def test_the_write_budget_frees_up_as_the_period_slides(
    api, world, tight_write_rate, monkeypatch
) -> None:
    from api.limits import CredentialWriteThrottle

    clock = [1_000_000.25]
    monkeypatch.setattr(CredentialWriteThrottle, "timer", lambda self: clock[0])
    body = {"agent_id": "support-bot", "project_id": str(world.project.id)}

    def mint() -> int:
        return api.post("/v1/runs", body, format="json", **world.app.headers).status_code

    # given: two writes 30 s apart, the budget of the minute used
    assert mint() == 201
    clock[0] += 30
    assert mint() == 201
    # when: a third comes 20 s later, then 11 s after that (the first has left the minute)
    clock[0] += 20
    refused = mint()
    clock[0] += 11
    let_through = mint()
    # then: the third waits for the first write's minute to end (DRF's rule: 10 s left, one
    # write's room), the fourth is let through, and a fifth right after is refused again
    assert refused == 429
    assert let_through == 201
    assert mint() == 429
    assert Run.objects.count() == 3


def test_a_refused_write_says_when_to_come_back(api, world, tight_write_rate, monkeypatch):
    from api.limits import CredentialWriteThrottle

    clock = [2_000_000.0]
    monkeypatch.setattr(CredentialWriteThrottle, "timer", lambda self: clock[0])
    body = {"agent_id": "support-bot", "project_id": str(world.project.id)}
    for step in (0, 15):
        clock[0] += step
        assert api.post("/v1/runs", body, format="json", **world.app.headers).status_code == 201
    clock[0] += 5
    # when: a third write comes 20 s after the first
    refused = api.post("/v1/runs", body, format="json", **world.app.headers)
    # then: Retry-After covers the 40 s left of the first write's minute (DRF's wait(), a
    # second added so that a client that waits exactly that long is let through)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == 41


def test_a_body_over_the_limit_is_refused_before_it_is_read(api, world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id), "session_id": "x" * 2000},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 413
    assert response.json()["code"] == "request-too-large"
    assert Run.objects.count() == 0
    # written as every other error is, byte for byte: the API's renderer, its content type
    refused = api.post("/v1/runs", {"agent_id": "support-bot"}, format="json", **world.app.headers)
    assert refused.status_code == 400
    assert response["Content-Type"] == refused["Content-Type"]
    assert response.content == ApiJSONRenderer().render(response.json())
    assert refused.content == ApiJSONRenderer().render(refused.json())


def test_the_embedded_database_is_durable_and_has_pgvector_08(db):
    assert database_problems() == []
    call_command("check_database")


def _set_fsync(value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER SYSTEM SET fsync = {value}")
        cursor.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        connection.close()  # a new session sees the reloaded setting
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('fsync')")
            if cursor.fetchone()[0] == value:
                return
        time.sleep(0.1)
    raise AssertionError(f"fsync did not become {value}")


@pytest.mark.django_db(transaction=True)
def test_kindmem_refuses_a_database_with_fsync_off():
    _set_fsync("off")
    try:
        assert database_problems() == ["fsync is off: a crash could lose committed writes"]
        with pytest.raises(CommandError, match="refuses to start"):
            call_command("check_database")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER SYSTEM RESET fsync")
        _set_fsync("on")


def test_the_throttle_counters_use_their_own_connection_in_production():
    from django.core.cache.backends.db import DatabaseCache

    from config.routers import CacheRouter

    cache_model = DatabaseCache("kindmem_cache", {}).cache_model_class
    assert CacheRouter().db_for_write(cache_model) == "cache"
    assert CacheRouter().db_for_read(cache_model) == "cache"
    assert CacheRouter().db_for_write(Run) is None
    assert CacheRouter().allow_migrate("cache", "kindmem") is False


def test_a_credential_past_its_concurrency_is_refused_429_and_others_go_on(rf, settings):
    # given: a process where a credential may have two requests running at once, and two of
    # its requests running (held inside the view)
    import threading

    from django.http import HttpResponse

    from api.limits import CredentialConcurrencyMiddleware

    settings.CREDENTIAL_CONCURRENCY = 2
    release, entered = threading.Event(), threading.Semaphore(0)

    def view(request):
        entered.release()
        release.wait(timeout=30)
        return HttpResponse("ok")

    middleware = CredentialConcurrencyMiddleware(view)
    token = "kmk_" + "a" * 12 + "b" * 40
    other = "kmr_" + "c" * 12 + "d" * 40

    def call(bearer: str):
        return middleware(rf.get("/v1/facts", HTTP_AUTHORIZATION=f"Bearer {bearer}"))

    answers: list = []
    running = [threading.Thread(target=lambda: answers.append(call(token))) for _ in range(2)]
    for thread in running:
        thread.start()
    for _ in running:
        assert entered.acquire(timeout=10)
    # when: a third request of the same credential comes, and one of another credential
    refused = call(token)
    beside = threading.Thread(target=lambda: answers.append(call(other)))
    beside.start()
    assert entered.acquire(timeout=10)
    release.set()
    for thread in [*running, beside]:
        thread.join(timeout=10)
    # then: the third is 429 in the error shape with Retry-After; the others were served,
    # and once they ended the credential may run again
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    assert json.loads(refused.content)["code"] == "rate-limited"
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert call(token).status_code == 200
    assert middleware._running == {}


@pytest.mark.django_db
def test_a_made_up_credential_costs_at_most_its_one_lookup(api, django_assert_max_num_queries):
    # a malformed one costs nothing at all: no transaction, no query
    with django_assert_max_num_queries(0):
        malformed = api.get("/v1/facts", HTTP_AUTHORIZATION="Bearer kmk_not-a-key")
    assert malformed.status_code == 401
    # a well-formed one: the lookup by its prefix (with the wall raised in the same round
    # trip), the wall lowered again, and the savepoint of the test's transaction
    with CaptureQueriesContext(connection) as queries:
        made_up = api.get("/v1/facts", HTTP_AUTHORIZATION=f"Bearer kmk_{'x' * 12}{'y' * 40}")
    assert made_up.status_code == 401
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 3, statements
    assert "kindmem_credential_tenant" in statements[0]
    assert '"kindmem_apikey"."prefix" =' in statements[1]
    assert "set_config('app.tenant_id', ''" in statements[2]


def test_a_saturated_database_is_a_503_with_retry_after_logged_in_one_line():
    # given: a request whose database connection could not be had (the pool's timeout)
    import logging

    from django.db import OperationalError
    from psycopg_pool import PoolTimeout

    from api.errors import OneLineUnavailable, json_server_error

    try:
        try:
            raise PoolTimeout("couldn't get a connection after 3.00 sec")
        except PoolTimeout as cause:
            raise OperationalError(str(cause)) from cause
    except OperationalError as exc:
        # when: Django's handler500 answers it, and Django logs it with its exception
        response = json_server_error(None)
        record = logging.LogRecord(
            "django.request",
            logging.ERROR,
            __file__,
            1,
            "Service Unavailable: %s",
            ("/v1/me",),
            (type(exc), exc, exc.__traceback__),
        )
    OneLineUnavailable().filter(record)
    # then: 503 `unavailable` with Retry-After, and one line with no traceback
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert json.loads(response.content)["code"] == "unavailable"
    assert record.exc_info is None
    assert "\n" not in logging.Formatter().format(record)
    assert "couldn't get a connection" in record.getMessage()


def test_a_failed_statement_is_not_mistaken_for_an_unavailable_database():
    import psycopg

    from api.errors import is_unavailable

    assert not is_unavailable(psycopg.errors.QueryCanceled("canceling statement due to timeout"))
    assert not is_unavailable(psycopg.errors.SerializationFailure("could not serialize"))
    assert is_unavailable(psycopg.errors.TooManyConnections("sorry, too many clients already"))
    assert is_unavailable(psycopg.OperationalError("connection refused"))


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_compressed_body_is_refused_never_inflated(api, world, coding):
    # given a run's body, compressed (no route inflates a body)
    body = gzip.compress(
        json.dumps({"agent_id": "support-bot", "project_id": str(world.project.id)}).encode()
    )
    # when it is posted with its Content-Encoding
    response = api.generic(
        "POST",
        "/v1/runs",
        data=body,
        content_type="application/json",
        HTTP_CONTENT_ENCODING=coding,
        **world.app.headers,
    )
    # then it is refused 415 in the error shape, naming the encoding, and nothing is written
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported-media-type"
    assert response.json()["details"] == {"content_encoding": coding, "accepted": ["identity"]}
    assert Run.objects.count() == 0


def test_a_console_body_over_the_limit_is_refused_before_csrf_parses_it(api, settings):
    # given a multipart body past the limit to the console's login page: Django's CSRF check
    # would parse it (its file parts spooled to disk whole) before anyone has logged in
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    part = (
        b'--b\r\nContent-Disposition: form-data; name="f"; filename="x"\r\n\r\n'
        + b"x" * 2000
        + b"\r\n--b--\r\n"
    )
    # when it is posted
    response = api.generic(
        "POST", "/admin/login/", data=part, content_type="multipart/form-data; boundary=b"
    )
    # then it is refused unread, 413 in the error shape
    assert response.status_code == 413
    assert response.json()["code"] == "request-too-large"
    assert response.json()["details"] == {"limit": 1000, "setting": "KINDMEM_MAX_BODY_BYTES"}
