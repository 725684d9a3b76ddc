"""The database connection pool of an ASGI process (Django's psycopg pool), and the callback
that makes a pooled connection safe to hand to the next request.

Why a pool there: under ASGI (uvicorn: the MCP server, `config.asgi`) Django runs each request's
synchronous code in a new thread, and Django's connections are per thread. Kept connections
(`CONN_MAX_AGE` > 0) outlived their threads until a garbage collection freed them: a stream of
MCP calls, even with a made-up token, held a connection each and exhausted PostgreSQL's
`max_connections`, taking every surface down. A pool of `KINDMEM_DATABASE_POOL_MAX` connections
per process bounds what any traffic can hold there; a request finds one within
`KINDMEM_DATABASE_POOL_TIMEOUT` seconds or is answered 503 `unavailable` (`api.errors`), and
one that would wait behind `KINDMEM_DATABASE_POOL_MAX_WAITING` others is answered so at once.
The web (gunicorn's asgi workers) and the MCP server (uvicorn) both serve config.asgi, so both
take their connections from this pool.

`reset`: when a request returns its connection, row security's session settings (the role, the
tenant: `kindmem.row_security`) are cleared whatever the request did, so no tenant's context
survives into the next request, even one whose own clean-up never ran.
"""

from __future__ import annotations

from typing import Any


def pool_options(*, max_size: int, timeout: float, max_waiting: int) -> dict[str, Any]:
    """`DATABASES[alias]["OPTIONS"]["pool"]`: psycopg_pool.ConnectionPool's arguments."""
    return {
        "min_size": 1,
        "max_size": max_size,
        "timeout": timeout,
        "max_waiting": max_waiting,
        "reset": reset,
        # the pool's own threads (connecting, resetting): three is psycopg_pool's default
        "num_workers": 2,
    }


def reset(conn: Any) -> None:
    """psycopg_pool's `reset`: the connection goes back to the login role with no tenant."""
    from django.conf import settings

    from kindmem.row_security import LEAVE_STATEMENT

    if settings.TRANSACTION_POOLING:  # nothing lives in the session there
        return
    conn.execute(LEAVE_STATEMENT)
    if not conn.autocommit:  # Django's pool is in autocommit; any other leaves it idle too
        conn.commit()
