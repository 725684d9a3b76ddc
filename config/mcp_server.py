"""kindmem's MCP server at `/mcp`: the ASGI endpoint agents' memory tools are served on, behind
a check of the host and the Bearer credential.

Built on the official `mcp` SDK (`MCPServer`), served as streamable HTTP, stateless (any web
process answers any request) with JSON responses (one JSON body per POST, no SSE stream). The
tools are config/mcp_tools.py's, each one REST route called in-process (config/mcp_rest.py).

**Auth.** `Authorization: Bearer <API key or run token>` on every MCP request; without one the
endpoint answers 401 in the error shape before MCP sees the request. Whether the credential is
valid, and what it may read, is decided by the route each tool calls: `tools/list` answers any
bearer, a tool call with a bad one is an `unauthenticated` tool error.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body
from config.mcp_tools import server

MCP_PATH = "/mcp"


def mcp_app() -> ASGIApp:
    """The ASGI app serving `/mcp` (its lifespan runs the SDK's session manager), behind a
    check that the request names an allowed host and carries a Bearer credential."""
    streamable = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        # The SDK's DNS-rebinding check allows only localhost unless told every host name; the
        # host is checked below against ALLOWED_HOSTS instead, as Django checks it, and a
        # rebinding page has no Bearer credential to send.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            refusal = _refusal(headers)
            if refusal is not None:
                await _answer(send, *refusal)
                return
        await streamable(scope, receive, send)

    return guarded


def _refusal(
    headers: dict[str, str],
) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None:
    domain, _ = split_domain_port(headers.get("host", ""))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not domain or not validate_host(domain, allowed):
        return 400, error_body("validation-error", "This host name is not served here."), []
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme != "Bearer" or not token.strip():
        body = error_body("unauthenticated", "Use 'Authorization: Bearer <key or run token>'.")
        return 401, body, [(b"www-authenticate", b'Bearer realm="kindmem"')]
    return None


async def _answer(
    send: Send, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]]
) -> None:
    content = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
