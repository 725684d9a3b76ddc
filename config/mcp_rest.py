"""How an MCP tool calls its REST route: in-process, through Django's ASGI handler.

**One code path.** Each tool is one REST route: it sends that route's request, with the MCP
request's own `Authorization` header, through Django's ASGI handler inside this process
(`rest()`), and returns the route's JSON as the tool's structured output. So a tool call is
authenticated, throttled, guarded (`readable_by(readers)` in the route's query), confined by
row security and audited exactly as the REST call is, by the very same code; its audit event
names the route (`POST remember`, `GET fact`, ...). A REST error becomes a tool error
(`is_error`) whose text and structured content are the error body (`{"code", "message",
"details"}`).
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

import anyio
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent
from starlette.types import ASGIApp

from api.errors import error_body

_django: Any = None  # the ASGIHandler, built on first use


def _django_app() -> ASGIApp:
    from django.core.handlers.asgi import ASGIHandler

    global _django  # one handler per process, built on first use (after Django is set up)
    if _django is None:
        _django = ASGIHandler()
    return _django


async def rest(
    ctx: Context,
    method: str,
    path: str,
    *,
    params: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
    content_type: str = "application/json",
    raw: str | None = None,
) -> CallToolResult:
    """Call a kindmem REST route in-process with this MCP request's credential: its JSON as
    the tool's structured output, or its error body as a tool error (`is_error`). The body is
    `body` as JSON, or `raw` text as it is (a memory file), as `content_type`."""
    incoming = ctx.headers or {}
    query = urlencode({k: _text(v) for k, v in (params or {}).items() if v is not None})
    if body is not None and content_type == "application/json":
        body = _drop_none(body)  # an argument left out; in a merge patch, null deletes a key
    if raw is not None:
        payload = raw.encode()
    else:
        payload = b"" if body is None else json.dumps(body).encode()
    headers = [(b"host", incoming.get("host", "localhost").encode("latin-1"))]
    if "authorization" in incoming:
        headers.append((b"authorization", incoming["authorization"].encode("latin-1")))
    if body is not None or raw is not None:
        headers += [
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(payload)).encode()),
        ]
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 80),
    }
    status, content = await _call(_django_app(), scope, payload)
    try:
        answer = json.loads(content)
    except ValueError:
        answer = error_body("persistence-error", f"HTTP {status} without a JSON body")
    text: list[Any] = [TextContent(type="text", text=json.dumps(answer))]
    return CallToolResult(content=text, structured_content=answer, is_error=status >= 400)


async def _call(app: ASGIApp, scope: dict[str, Any], payload: bytes) -> tuple[int, bytes]:
    """Run one HTTP exchange through an ASGI app; its status and body."""
    sent = False
    disconnected = anyio.Event()
    status = 500
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await disconnected.wait()  # Django listens for a disconnect while the view runs
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    try:
        await app(scope, receive, send)
    finally:
        disconnected.set()
    return status, b"".join(chunks)


def _text(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    """A JSON body of the arguments given (None: not sent, the route's default applies)."""
    return {
        k: v.isoformat() if isinstance(v, datetime) else v for k, v in body.items() if v is not None
    }


def segment(value: str) -> str:
    """`value` as one segment of a route's path (a `/` in an id never reaches another route)."""
    return quote(value, safe="")
