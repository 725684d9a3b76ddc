"""Lag-tolerant reads on a streaming read replica (KINDMEM_REPLICA_URL), everything else on the
primary (DESIGN "Past one machine").

A view that may read from the replica (`AuditedView.replica_methods`: search, list, get,
recall) runs its handler inside `reads_on_replica`: for the block, this thread's default
connection is the replica's (`connections["default"] = ...`, Django's connection handler), so
every query of the handler, the compiled and prepared ones included, goes there unchanged and
under the same wall (the credential's tenant is entered on the replica's session and cleared on
the way out). The credential was looked up on the primary before, and the audit event is
written there after, when the primary is the default again.

- **Read your writes**: a credential that wrote in the last KINDMEM_REPLICA_PIN_SECONDS reads
  from the primary (`written_by`, a key in the shared cache), so its own write is never missing
  from its next read, however far the replica lags. Measured on one machine the replica
  replays a write within milliseconds; the pin covers a replica under load.
- **Fallback**: a replica that cannot be reached (its connection checked as any kept one is,
  then opened) is skipped for KINDMEM_REPLICA_RETRY_SECONDS, and the request reads from the
  primary: a stopped replica costs one failed connection attempt per process and interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, Error, connections, transaction

from kindmem.access import Principal
from kindmem.row_security import LEAVE_STATEMENT, tenant_context

logger = logging.getLogger(__name__)

REPLICA = "replica"

# Until when this process skips the replica (monotonic seconds), after it could not be reached.
_skip_until = 0.0


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def written_by(principal: Principal) -> None:
    """Record that `principal` has just written: its reads stay on the primary for a while."""
    if replica_configured() and settings.REPLICA_PIN_SECONDS > 0:
        # The pin's end travels as the value: the database cache keeps expiry to the whole
        # second, which would end a pin of one second anywhere between 0 and 1 s after it began.
        pinned_until = time.time() + settings.REPLICA_PIN_SECONDS
        cache.set(_pin_key(principal), pinned_until, timeout=settings.REPLICA_PIN_SECONDS + 1)


def _pinned(principal: Principal) -> bool:
    pinned_until = cache.get(_pin_key(principal))
    return pinned_until is not None and time.time() < pinned_until


@contextmanager
def reads_on_replica(principal: Principal) -> Iterator[bool]:
    """Run the block's queries on the replica, as `principal`'s tenant, when there is one that
    answers and the principal has not just written; yields whether it did."""
    global _skip_until
    if not replica_configured() or time.monotonic() < _skip_until or _pinned(principal):
        yield False
        return
    primary, replica = connections[DEFAULT_DB_ALIAS], connections[REPLICA]
    try:
        replica.close_if_health_check_failed()
        replica.ensure_connection()
    except Error as exc:
        _skip_until = time.monotonic() + settings.REPLICA_RETRY_SECONDS
        logger.warning("the read replica is out of reach, reading from the primary: %s", exc)
        replica.close()
        yield False
        return
    connections[DEFAULT_DB_ALIAS] = replica
    # behind a transaction-mode pooler the tenant is local to a transaction (row_security)
    in_transaction = transaction.atomic(using=REPLICA) if settings.TRANSACTION_POOLING else None
    try:
        with in_transaction or nullcontext(), tenant_context(principal.tenant_id):
            yield True
    finally:
        try:
            if replica.connection is not None:  # the primary's tenant stays the primary's
                with replica.cursor() as cursor:
                    cursor.execute(LEAVE_STATEMENT)
        finally:
            connections[DEFAULT_DB_ALIAS] = primary


def _pin_key(principal: Principal) -> str:
    return f"kindmem-wrote:{principal.id}"
