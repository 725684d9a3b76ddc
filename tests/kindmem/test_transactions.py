"""A service's atomic block (api/transactions.py): its own savepoint, except directly
inside a request's one transaction, where a refusal still leaves nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from api.transactions import request_atomic, service_atomic
from kindmem.models import Tenant

pytestmark = pytest.mark.django_db


class Refused(Exception):
    pass


@service_atomic
def write_then_refuse(name: str) -> None:
    Tenant.objects.create(name=name)
    raise Refused()


def savepoints(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured if "SAVEPOINT" in q["sql"]]


def test_outside_a_request_a_refusal_leaves_the_callers_transaction_usable() -> None:
    # given: a caller's own transaction
    with transaction.atomic():
        # when: the service refuses after writing
        with pytest.raises(Refused):
            write_then_refuse("refused")

        # then: its write is undone and the caller goes on
        assert not Tenant.objects.filter(name="refused").exists()
        Tenant.objects.create(name="after")
    assert Tenant.objects.filter(name="after").exists()


def test_directly_in_a_request_a_refusal_takes_no_savepoint_and_leaves_nothing() -> None:
    seen: dict[str, Any] = {}

    def view() -> None:
        # when: the service, called directly in the request's transaction, refuses after writing
        with CaptureQueriesContext(connection) as captured, pytest.raises(Refused):
            write_then_refuse("refused")
        seen["savepoints"] = savepoints(captured)
        try:
            Tenant.objects.exists()
        except TransactionManagementError:
            seen["went_on"] = False
        raise Refused()  # the view answers with the error: the request's transaction ends

    with pytest.raises(Refused), request_atomic():
        view()

    # then: no savepoint of its own, the request could not go on, and nothing of it is left
    assert seen == {"savepoints": [], "went_on": False}
    assert not Tenant.objects.filter(name="refused").exists()


def test_even_a_request_that_returns_normally_commits_nothing_of_a_refused_write() -> None:
    # given: a request's transaction that swallows the refusal and ends without an error
    with request_atomic(), pytest.raises(Refused):
        write_then_refuse("swallowed")

    # then: its transaction was rolled back, not committed
    assert not Tenant.objects.filter(name="swallowed").exists()


def test_a_block_of_the_views_own_around_the_call_gets_the_savepoint_back() -> None:
    # given: a request whose view opens a block of its own to catch the refusal and go on
    with request_atomic(), transaction.atomic():
        with CaptureQueriesContext(connection) as captured, pytest.raises(Refused):
            write_then_refuse("refused")
        # then: the service took its savepoint, and the view goes on
        assert len(savepoints(captured)) == 3  # the savepoint, its rollback and release
        Tenant.objects.create(name="after")
    assert Tenant.objects.filter(name="after").exists()
    assert not Tenant.objects.filter(name="refused").exists()


def test_a_service_inside_another_service_takes_a_savepoint(world: Any) -> None:
    # given: a request's transaction, and a service that calls another one
    @service_atomic
    def outer() -> None:
        with pytest.raises(Refused):
            write_then_refuse("inner")
        Tenant.objects.create(name="outer")

    # when: the inner one refuses and the outer one goes on
    with request_atomic():
        outer()

    # then: the inner one's write is undone, the outer one's kept
    assert Tenant.objects.filter(name="outer").exists()
    assert not Tenant.objects.filter(name="inner").exists()
