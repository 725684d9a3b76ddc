"""kindmem's MCP server at `/mcp`: the ASGI endpoint agents' memory tools are served on, behind
a check of the host and the Bearer credential.

Built on the official `mcp` SDK (`MCPServer`), served as streamable HTTP, stateless (any web
process answers any request) with JSON responses (one JSON body per POST, no SSE stream). The
tools are config/mcp_tools.py's, each one REST route called in-process (config/mcp_rest.py).

**Before a request reaches MCP** (`guarded`), in this order, each refusal in the error shape:
the host must be allowed (400); a Bearer credential must be there (401) and valid: it is looked
up as REST authentication looks it up (`kindmem.authentication.principal_of`, one round trip,
its connection back in the pool at once), so a made-up or revoked one is refused (401) before
any stream is opened. A credential holds at most KINDMEM_MCP_STREAMS_PER_CREDENTIAL requests
open at /mcp in this process (429 past it), and the process at most KINDMEM_MCP_MAX_STREAMS
event streams (GET; 503 past it). A POST's body is read here, whole, within
KINDMEM_BODY_TIMEOUT_SECONDS and KINDMEM_MAX_BODY_BYTES (408, 413) by the reader every other path
uses (config/request_bodies.py), after the credential is checked; only then does it take
one of the process's in-flight slots (config/admission.py). An event stream (GET) is closed
after KINDMEM_MCP_STREAM_IDLE_SECONDS: a stateless server never writes to it.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework.exceptions import AuthenticationFailed
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import Unavailable, error_body, is_unavailable
from config.admission import Admission, refuse
from config.mcp_tools import server
from config.request_bodies import BodyRefused, declared_over, read_body, replaying, too_large

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
_BEARER = [(b"www-authenticate", b'Bearer realm="kindmem"')]
_RETRY = [(b"retry-after", str(Unavailable.retry_after_seconds).encode())]


def mcp_app(admission: Admission) -> ASGIApp:
    """The ASGI app serving `/mcp` (its lifespan runs the SDK's session manager), behind the
    checks above; a POST that passes them is counted by `admission`."""
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
    # The credential lookups, apart from the threads Django runs requests in; as many as the
    # process may hold database connections, so a flood of lookups queues here, not there.
    lookups = ThreadPoolExecutor(
        max_workers=settings.DATABASE_POOL_MAX, thread_name_prefix="kindmem-mcp-auth"
    )
    open_by_credential: Counter[str] = Counter()  # one event loop per process: no lock needed
    streams = 0
    idle = settings.MCP_STREAM_IDLE_SECONDS

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal streams
        if scope["type"] != "http":
            await streamable(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = _refusal(headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        token = headers["authorization"].partition(" ")[2].strip()
        try:
            credential = await _lookup(lookups, token)
        except AuthenticationFailed as exc:
            await _answer(send, 401, error_body("unauthenticated", str(exc.detail)), _BEARER)
            return
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            logger.warning("unavailable: %s: %s", type(exc.__cause__ or exc).__name__, exc)
            await _answer(
                send, 503, error_body(Unavailable.code, Unavailable.default_message), _RETRY
            )
            return
        is_stream = scope["method"] == "GET"
        if open_by_credential[credential] >= settings.MCP_STREAMS_PER_CREDENTIAL:
            limited = error_body(
                "rate-limited",
                f"This credential has {settings.MCP_STREAMS_PER_CREDENTIAL} requests open at"
                " /mcp already; close one first.",
            )
            await _answer(send, 429, limited, _RETRY)
            return
        if is_stream and streams >= settings.MCP_MAX_STREAMS:
            await refuse(send)
            return
        open_by_credential[credential] += 1
        streams += is_stream
        try:
            if is_stream:
                await _stream(streamable, scope, receive, send, idle)
                return
            if scope["method"] != "POST":  # DELETE of a session: the SDK answers it
                await streamable(scope, receive, send)
                return
            body = await read_body(
                receive,
                limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                deadline=settings.BODY_TIMEOUT_SECONDS,
            )
            if isinstance(body, BodyRefused):
                await _answer(send, body.status, body.body, [])
                return
            with admission.slot(scope["path"]) as admitted:
                if not admitted:
                    await refuse(send)
                    return
                await streamable(scope, replaying(body, receive), send)
        finally:
            streams -= is_stream
            open_by_credential[credential] -= 1
            if not open_by_credential[credential]:
                del open_by_credential[credential]

    return guarded


async def _lookup(lookups: ThreadPoolExecutor, token: str) -> str:
    # a context of its own: the lookup's tenant (row security's context variable) stays there
    return await asyncio.get_running_loop().run_in_executor(
        lookups, contextvars.Context().run, _credential_of, token
    )


def _credential_of(token: str) -> str:
    """The credential's key ("key:<id>" or "run:<id>"), or AuthenticationFailed; the lookup's
    connection goes back to the pool (which clears its tenant: config/pool.py) at once."""
    from django.db import connection, transaction

    from kindmem.authentication import principal_of

    try:
        with transaction.atomic():  # transaction-local settings under a transaction pooler
            principal = principal_of(token)
    finally:
        connection.close()
    if principal.run is not None:
        return f"run:{principal.run.pk}"
    return f"key:{principal.api_key.pk}"  # type: ignore[union-attr]


async def _stream(app: ASGIApp, scope: Scope, receive: Receive, send: Send, idle: int) -> None:
    """An event stream, closed after `idle` seconds: a stateless server never writes to it, so
    a client that still wants one reconnects (as event streams do)."""
    finished = False

    async def sending(message: Message) -> None:
        nonlocal finished
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            finished = True
        await send(message)

    with anyio.move_on_after(idle):
        await app(scope, receive, sending)
    if not finished:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


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
        return 401, body, _BEARER
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if declared_over(headers, limit):
        return 413, too_large(limit).body, []
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
