"""Django's PostgreSQL backend, with a health check that needs no round trip for a kept
connection that is plainly alive.

With `CONN_HEALTH_CHECKS` Django sends `SELECT 1` on each kept connection before a request's
first statement, so that one the server dropped meanwhile is replaced instead of failing that
request: a round trip per connection per request (a search 1 of 7, a write 2 of 21). Here the
connection's socket is asked first, without waiting: a server that closed the connection (a
restart, `pg_terminate_backend`, an idle timeout) has made it readable (its termination notice,
or the end of the stream), and nothing else sends to an idle connection that LISTENs to nothing.
Only then, or when the connection was idle longer than `QUIET_CHECK_SECONDS` (a middlebox
that drops idle connections silently would show nothing on the socket), does Django's
`SELECT 1` run. Either way a dropped connection is found and replaced before the request uses
it.
"""

from __future__ import annotations

import select
import time
from typing import Any

import psycopg
from django.db.backends.postgresql import base, operations

# A connection idle longer than this gets Django's `SELECT 1` whatever its socket says.
QUIET_CHECK_SECONDS = 5.0


class DatabaseOperations(operations.DatabaseOperations):
    compiler_module = "config.postgresql_backend.compiler"

    def last_executed_query(self, cursor: Any, sql: Any, params: Any) -> Any:
        # Django reads a client-side cursor's query; compiled's cursors bind server-side
        # (prepared statements) on a connection whose others do not: the debug log and the
        # tests' statement captures write theirs out as Django does for server-side binding.
        if not isinstance(cursor, psycopg.ClientCursor):
            try:
                return self.compose_sql(sql, params)
            except psycopg.errors.DataError:
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
    _checked_at = 0.0  # when the connection was last known alive (connected or checked)

    def connect(self) -> None:
        super().connect()
        self._checked_at = time.monotonic()

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is None
            or not self.health_check_enabled  # type: ignore[attr-defined]  # not in django-stubs
            or self.health_check_done  # type: ignore[has-type]
        ):
            return
        now = time.monotonic()
        quiet = now - self._checked_at <= QUIET_CHECK_SECONDS and not _pending(self.connection)
        self._checked_at = now
        if quiet and not self.pool:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _pending(connection: object) -> bool:
    """Whether the server sent anything on the idle connection (or closed it)."""
    try:
        fd = connection.pgconn.socket  # type: ignore[attr-defined]
    except Exception:  # a closed or broken connection: let Django's check decide
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))
