"""The Python client against the real app (in-process, test_python_client.py tells how):
errors raised as their classes, and bounded retries."""

from __future__ import annotations

import uuid

import httpx
import kindmem_client
import pytest
from kindmem_client import (
    Client,
    FactNotFound,
    Forbidden,
    KindmemError,
    NotFound,
    RateLimited,
    RetryPolicy,
    Unauthenticated,
    ValidationError,
    errors,
)

from tests.clients.conftest import BASE, mint, wsgi_client

# A request's end keeps this test's connection (conftest.py). Slow, as when these tests were
# part of test_python_client.py (a module that starts processes is marked slow whole,
# tests/conftest.py); left as they were by the split.
pytestmark = [pytest.mark.usefixtures("keep_the_tests_connection"), pytest.mark.slow]


# ---- errors -----------------------------------------------------------------------------------


def server_codes() -> set[str]:
    """Every code the server can answer: its KindmemError classes, what DRF's exceptions map
    to, the body-size refusal and gunicorn's own refusals."""
    from rest_framework import exceptions as drf

    from api import errors as server
    from config.raw_errors import CODES as GUNICORN

    codes: set[str] = set()
    stack = [server.KindmemError]
    while stack:
        cls = stack.pop()
        codes.add(cls.code)
        stack.extend(cls.__subclasses__())
    drf_errors = [
        drf.NotAuthenticated(),
        drf.PermissionDenied(),
        drf.NotFound(),
        drf.MethodNotAllowed("GET"),
        drf.UnsupportedMediaType("x"),
        drf.NotAcceptable(),
        drf.Throttled(),
        drf.ValidationError(),
    ]
    codes |= {server._drf_code(exc) for exc in drf_errors}
    return codes | set(GUNICORN.values()) | {"request-too-large"}


def test_every_error_code_of_the_server_has_its_own_exception_class():
    for code in server_codes():
        cls = errors.CODES.get(code)
        assert cls is not None, f"no exception class for {code!r}"
        assert issubclass(cls, KindmemError)
        assert cls.code == code
    # and each class is exported from the package
    assert {cls.__name__ for cls in errors.CODES.values()} <= set(kindmem_client.__all__)


@pytest.mark.django_db
def test_errors_are_raised_as_their_classes_carrying_code_message_and_status(agent_world):
    world = agent_world
    run = mint(world.app.token, world, "p-err", "t-err")
    with wsgi_client(run["token"]) as agent, wsgi_client("kmk_nonsense") as stranger:
        # a missing fact: FactNotFound, which is a NotFound
        with pytest.raises(FactNotFound) as missing:
            agent.get_fact(uuid.uuid4())
        assert isinstance(missing.value, NotFound)
        assert (missing.value.code, missing.value.status_code) == ("fact-not-found", 404)
        assert missing.value.message
        # a bad credential, a role the run lacks, a body the API refuses
        with pytest.raises(Unauthenticated):
            stranger.me()
        with pytest.raises(Forbidden):
            agent.list_approvals()
        with pytest.raises(ValidationError) as invalid:
            agent.search_facts(" ")
        assert "query" in invalid.value.details


def test_an_answer_outside_the_error_shape_is_an_unexpected_response():
    client = Client(
        None,
        base_url=BASE,
        transport=httpx.MockTransport(lambda r: httpx.Response(502, text="<html>bad</html>")),
    )
    with pytest.raises(errors.UnexpectedResponse) as raised:
        client.me()
    assert raised.value.status_code == 502
    # and a code this client does not know is still a KindmemError, with that code
    newer = Client(
        None,
        base_url=BASE,
        transport=httpx.MockTransport(
            lambda r: httpx.Response(409, json={"code": "brand-new", "message": "m"})
        ),
    )
    with pytest.raises(KindmemError) as unknown:
        newer.me()
    assert unknown.value.code == "brand-new"


# ---- retries ----------------------------------------------------------------------------------


@pytest.fixture
def tight_write_rate(monkeypatch):
    """Two writes a minute per credential, on a clock the test moves."""
    from rest_framework.throttling import SimpleRateThrottle

    clock = {"now": 1_000_000.0}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"writes": "2/min"})
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: clock["now"])
    return clock


@pytest.mark.django_db
def test_a_429_is_retried_after_its_retry_after_and_then_succeeds(world, tight_write_rate):
    # given a credential that spent its writes, and a client whose sleep moves the clock
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        tight_write_rate["now"] += seconds

    scope = {"project_id": str(world.project.id)}
    with wsgi_client(world.app.token, sleep=sleep) as app:
        app.create_fact(type="note", content="a", scope=scope)
        app.create_fact(type="note", content="b", scope=scope)
        # when it writes again
        third = app.create_fact(type="note", content="c", scope=scope)
    # then it waited as the server said, once, and the write landed once
    assert third["outcome"] == "created"
    assert len(waits) == 1
    assert 0 < waits[0] <= 61


@pytest.mark.django_db
def test_retries_are_bounded_by_count_and_by_the_longest_wait(world, tight_write_rate):
    scope = {"project_id": str(world.project.id)}
    waits: list[float] = []
    # given a credential that spent its writes
    with wsgi_client(world.app.token, sleep=waits.append) as app:
        app.create_fact(type="note", content="a", scope=scope)
        app.create_fact(type="note", content="b", scope=scope)
        # when the clock does not move, the client gives up after its retries
        with pytest.raises(RateLimited) as limited:
            app.create_fact(type="note", content="c", scope=scope)
    assert len(waits) == RetryPolicy().max_retries
    assert limited.value.retry_after is not None
    assert limited.value.retry_after > 0
    # and a wait longer than it allows is not waited for at all
    waits.clear()
    impatient = RetryPolicy(max_wait=1.0)
    with (
        wsgi_client(world.app.token, sleep=waits.append, retry=impatient) as app,
        pytest.raises(RateLimited),
    ):
        app.create_fact(type="note", content="d", scope=scope)
    assert waits == []


def test_a_busy_server_is_retried_but_a_missing_embedder_is_not():
    # given the answers kindmem gives a request that wrote nothing, and one that waiting won't fix
    def answer(status: int, code: str, retry_after: str | None = "1") -> httpx.Response:
        headers = {"Retry-After": retry_after} if retry_after else {}
        return httpx.Response(
            status, json={"code": code, "message": code, "details": None}, headers=headers
        )

    policy = RetryPolicy()
    # then: a 503 `unavailable` waits as the server says, a bounded number of times
    assert policy.wait_for(answer(503, "unavailable"), 0) == 1.0
    assert policy.wait_for(answer(503, "unavailable", None), 1) == 2.0
    assert policy.wait_for(answer(503, "unavailable"), policy.max_retries) is None
    # and what waiting does not fix is raised at once, as its own class
    assert policy.wait_for(answer(503, "embedding-unavailable"), 0) is None
    assert policy.wait_for(answer(500, "persistence-error"), 0) is None
    busy = errors.error_from_response(answer(503, "unavailable", "2"))
    assert isinstance(busy, kindmem_client.Unavailable)
    assert busy.retry_after == 2.0
