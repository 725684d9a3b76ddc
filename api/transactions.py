"""A request's one transaction, and a service's atomic block inside it.

A service runs in `transaction.atomic`, so that a write it refuses (a held person, a scope the
writer may not write into) undoes its own statements and leaves its caller's transaction
usable: the caller may go on (an erasure test writes, is refused, and reads on). That costs a
savepoint and its release, two round trips per call.

A view whose whole request runs in one transaction (`request_atomic`: `AuditedView`) never
goes on after a failed service call: the error becomes its response and the request's
transaction is rolled back whole. So a service called directly inside it, with no atomic block
of the view's own between the two, runs in that transaction without a savepoint of its own
(`service_atomic`): a refused write still leaves nothing, since the request's transaction is
marked for rollback (Django's `needs_rollback`) and nothing of it commits. Any other caller, and
a view that opened a block of its own around the call (to catch the refusal and go on), gets
a savepoint of the service's own.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse

from api.bearer import presented_credential

P = ParamSpec("P")
R = TypeVar("R")

# How many atomic blocks were open on the connection inside the request's own (None: no request
# transaction on this thread)
_request_depth: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "kindmem_request_depth", default=None
)


@contextmanager
def request_atomic() -> Iterator[None]:
    """The request's one transaction: whatever fails inside it, none of it commits."""
    with transaction.atomic():
        token = _request_depth.set(len(connection.atomic_blocks))
        try:
            yield
        finally:
            _request_depth.reset(token)


def directly_in_request() -> bool:
    """Whether the innermost open atomic block is the request's own transaction."""
    return _request_depth.get() == len(connection.atomic_blocks)


def service_atomic(func: Callable[P, R]) -> Callable[P, R]:
    """`transaction.atomic` for a service: a savepoint of its own, except directly inside a
    request's transaction (the module docstring)."""

    @functools.wraps(func)
    def inner(*args: P.args, **kwargs: P.kwargs) -> R:
        with transaction.atomic(savepoint=not directly_in_request()):
            return func(*args, **kwargs)

    return inner


class TransactionPerRequestMiddleware:
    """Behind a transaction-mode pooler (KINDMEM_TRANSACTION_POOLING: PgBouncer), every request
    runs in one transaction, so that its row-security settings (transaction-local there:
    kindmem/row_security.py) hold for all of its statements, which the pooler runs on one server
    connection, and end with it. A request answered 5xx is rolled back whole. A /v1 request
    without a well-formed credential needs no database: it takes no connection either."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not settings.TRANSACTION_POOLING or (
            request.path.startswith("/v1/") and presented_credential(request) is None
        ):
            return self.get_response(request)
        with transaction.atomic():
            response = self.get_response(request)
            if response.status_code >= 500:
                transaction.set_rollback(True)
            return response
