"""Admission control of an ASGI process: at most KINDMEM_MAX_IN_FLIGHT HTTP requests at once.

Django runs each ASGI request's synchronous code in a thread of its own, and the MCP SDK holds
each tool call's state until Django answers: past the database pool's bound (config/pool.py)
more requests only queue, each holding a thread and memory. The next one past the bound is
answered at once, 503 `unavailable` with Retry-After in the error shape, having cost nothing.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import Unavailable, error_body
from api.renderers import ApiJSONRenderer
from config.metrics import SHED

logger = logging.getLogger(__name__)


def admitting(app: ASGIApp, *, limit: int) -> ASGIApp:
    """`app` behind a bound of `limit` HTTP requests at once (lifespan and the rest pass)."""
    in_flight = 0  # one event loop per process: no lock needed between awaits

    async def admitted(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal in_flight
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if in_flight >= limit:
            logger.warning("unavailable: %d requests in flight, %s refused", limit, scope["path"])
            SHED.labels("503").inc()
            await _refuse(send)
            return
        in_flight += 1
        try:
            await app(scope, receive, send)
        finally:
            in_flight -= 1

    return admitted


async def _refuse(send: Send) -> None:
    body = ApiJSONRenderer().render(
        error_body(Unavailable.code, "kindmem is busy here; retry after a moment.")
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(Unavailable.retry_after_seconds).encode()),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
