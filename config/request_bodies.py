"""An ASGI process's request bodies, read within KINDMEM_MAX_BODY_BYTES and
KINDMEM_BODY_TIMEOUT_SECONDS as their bytes arrive.

Under WSGI a body is what its Content-Length says and no more (gunicorn and Django's
LimitedStream), and api.limits.BodySizeLimitMiddleware refuses a long one unread. Under ASGI a
chunked body has no length to check: Django's handler spools all of it (to disk past 2.5 MB)
before any middleware runs, and the MCP SDK answers its own limit in plain text. So the body is
read here first, counted, and refused in the error shape (413 `request-too-large`) as soon as it
passes the limit, or (408) when it has not all arrived within the deadline: a client that sends
half a body and waits would otherwise hold its request (and the in-flight slot it takes) as long
as it likes. A body within both is handed on as one message, as Django would have read it.

`read_body` is the one reader: `body_limited` calls it for every path but MCP's, and the MCP
server (config/mcp_server.py) calls it itself once a request's credential is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import RequestTooLarge, error_body
from api.renderers import ApiJSONRenderer


@dataclass(frozen=True)
class BodyRefused:
    """Why a body was not read: the status and the error body to answer."""

    status: int
    body: dict[str, Any]


async def read_body(receive: Receive, *, limit: int, deadline: float) -> bytes | BodyRefused:
    """The whole body, or why it is refused: over `limit` bytes (413), not all arrived within
    `deadline` seconds (408), or the client left before its end (400, to no one)."""
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(deadline):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return BodyRefused(
                    400, error_body("validation-error", "The request ended before its body.")
                )
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
    # 408 (RFC 9110: the server would not wait longer), in the vocabulary's word for a request
    # that is not acceptable as sent
    return BodyRefused(
        408,
        error_body(
            "validation-error",
            f"The request body did not arrive within {deadline:g} s.",
            {"seconds": deadline, "setting": "KINDMEM_BODY_TIMEOUT_SECONDS"},
        ),
    )


def too_large(limit: int) -> BodyRefused:
    return BodyRefused(
        413,
        error_body(
            RequestTooLarge.code,
            f"The request body is over the limit of {limit} bytes.",
            {"limit": limit, "setting": "KINDMEM_MAX_BODY_BYTES"},
        ),
    )


def declared_over(headers: dict[str, str], limit: int) -> bool:
    """Whether the body's declared length passes `limit`: refused before a byte of it is read."""
    declared = headers.get("content-length", "")
    return declared.isdigit() and int(declared) > limit


def replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` whose first message is the whole body (read already); then what the client
    sends next (its disconnect) as it comes."""
    read: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return read.pop() if read else await receive()

    return replay


def body_limited(
    app: ASGIApp,
    *,
    limit: int,
    deadline: float,
    exempt: Callable[[Scope], bool] = lambda scope: False,
) -> ASGIApp:
    """`app` behind a bound of `limit` bytes and `deadline` seconds on every HTTP request's
    body, declared or not (what `exempt` names reads its own, with `read_body`)."""

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or exempt(scope):
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if declared_over(headers, limit):
            await answer_refusal(send, too_large(limit))
            return
        body = await read_body(receive, limit=limit, deadline=deadline)
        if isinstance(body, BodyRefused):
            if body.status != 400:  # a client that left hears nothing
                await answer_refusal(send, body)
            return
        await app(scope, replaying(body, receive), send)

    return limited


async def answer_refusal(send: Send, refused: BodyRefused) -> None:
    """The refusal in the error shape; the connection is closed after it (its body unread)."""
    content = ApiJSONRenderer().render(refused.body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
