"""Admission control of an ASGI process: at most KINDMEM_MAX_IN_FLIGHT HTTP requests at once.

Django runs each ASGI request's synchronous code in a thread of its own, and the MCP SDK holds
each tool call's state until Django answers: past the database pool's bound (config/pool.py)
more requests only queue, each holding a thread and memory. The next one past the bound is
answered at once, 503 `unavailable` with Retry-After in the error shape, having cost nothing.

What holds no thread and no connection is not counted: a request at /mcp is admitted by the
MCP server itself (config/mcp_server.py) once its credential is known and its body read, so
that clients that are slow, or have no valid credential, never take a slot from one that does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import Unavailable, error_body
from api.renderers import ApiJSONRenderer
from config.metrics import SHED

logger = logging.getLogger(__name__)


class Admission:
    """The count of requests in flight in this process (one event loop: no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0

    @contextmanager
    def slot(self, path: str) -> Iterator[bool]:
        """Whether the request got a slot (held for the block), else it is to be refused."""
        if self.in_flight >= self.limit:
            logger.warning("unavailable: %d requests in flight, %s refused", self.limit, path)
            SHED.labels("503").inc()
            yield False
            return
        self.in_flight += 1
        try:
            yield True
        finally:
            self.in_flight -= 1


def admitting(
    app: ASGIApp,
    *,
    admission: Admission,
    exempt: Callable[[Scope], bool] = lambda scope: False,
) -> ASGIApp:
    """`app` behind `admission` (lifespan, and what `exempt` names, pass uncounted)."""

    async def admitted(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or exempt(scope):
            await app(scope, receive, send)
            return
        with admission.slot(scope["path"]) as got_one:
            if got_one:
                await app(scope, receive, send)
            else:
                await refuse(send)

    return admitted


async def refuse(send: Send) -> None:
    """503 `unavailable` with Retry-After, in the error shape."""
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
