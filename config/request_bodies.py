"""An ASGI process's request bodies, read within KINDMEM_MAX_BODY_BYTES as their bytes arrive.

Under WSGI a body is what its Content-Length says and no more (gunicorn and Django's
LimitedStream), and api.limits.BodySizeLimitMiddleware refuses a long one unread. Under ASGI a
chunked body has no length to check: Django's handler spools all of it (to disk past 2.5 MB)
before any middleware runs, and the MCP SDK answers its own limit in plain text. So the body is
read here first, counted, and refused in the error shape (413 `request-too-large`) as soon as it
passes the limit; a body within it is handed on as one message, as Django would have read it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import RequestTooLarge, error_body
from api.renderers import ApiJSONRenderer


def body_limited(app: ASGIApp, *, limit: int) -> ASGIApp:
    """`app` behind a bound of `limit` bytes on every HTTP request's body, declared or not."""

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # the client left before its body ended: nothing to answer
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await _refuse(send, limit)
                return
            if not message.get("more_body", False):
                break
        read: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            # the body once, then what the client sends next (a disconnect) as it comes
            return read.pop() if read else await receive()

        await app(scope, replay, send)

    return limited


async def _refuse(send: Send, limit: int) -> None:
    body = ApiJSONRenderer().render(
        error_body(
            RequestTooLarge.code,
            f"The request body is over the limit of {limit} bytes.",
            {"limit": limit, "setting": "KINDMEM_MAX_BODY_BYTES"},
        )
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
