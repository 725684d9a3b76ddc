"""The check of a kept database connection before a request uses it (config/postgresql_backend):
a connection the server dropped is still replaced before the request's first statement, and a
plainly alive one is not asked `SELECT 1`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

from config.postgresql_backend import base

pytestmark = pytest.mark.django_db


@pytest.fixture
def kept() -> Iterator[Any]:
    """A connection of its own to the test database, kept between requests as in production."""
    wrapper = type(connections["default"])(
        {**connection.settings_dict, "CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True}, "kept"
    )
    yield wrapper
    wrapper.close()


def request_starts(wrapper: Any) -> None:
    wrapper.close_if_unusable_or_obsolete()  # what Django runs as each request starts


def backend_pid(wrapper: Any) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def selects_one(wrapper: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    asked: list[int] = []
    usable = type(wrapper).is_usable

    def counted(self: Any) -> bool:
        asked.append(1)
        return usable(self)

    monkeypatch.setattr(type(wrapper), "is_usable", counted)
    return asked


def test_the_backends_check_the_socket_first() -> None:
    assert isinstance(connections["default"], base.DatabaseWrapper)


def test_a_connection_the_server_dropped_is_replaced_before_the_request_uses_it(
    kept: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a kept connection, recently used, that the server then terminated
    first = backend_pid(kept)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [first])
    asked = selects_one(kept, monkeypatch)

    # when: the next request starts and runs a statement
    request_starts(kept)
    second = backend_pid(kept)

    # then: the check asked the server, found it gone, and the statement ran on a new connection
    assert asked == [1]
    assert second != first


def test_a_quiet_connection_is_not_asked_select_1(
    kept: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a kept connection, used a moment ago
    first = backend_pid(kept)
    asked = selects_one(kept, monkeypatch)

    # when: the next request starts and runs a statement
    request_starts(kept)

    # then: the same connection, and no round trip to check it
    assert backend_pid(kept) == first
    assert asked == []


def test_a_connection_idle_for_long_is_asked_select_1(
    kept: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a kept connection, idle longer than a socket alone can vouch for
    first = backend_pid(kept)
    kept._checked_at -= base.QUIET_CHECK_SECONDS + 1
    asked = selects_one(kept, monkeypatch)

    # when: the next request starts and runs a statement
    request_starts(kept)

    # then: Django's check ran, and the connection was kept
    assert backend_pid(kept) == first
    assert asked == [1]
