"""Whole HTTP/1.1 answers in kindmem's error shape, for the servers' own refusals (a head too
slow, too large or malformed) written before any application sees the request: gunicorn's
(config/gunicorn_conf.py) and the MCP server's uvicorn (config/mcp_serve.py)."""

from __future__ import annotations

import json

# Codes as in api/errors.py; any other 4xx a server answers itself is a malformed request.
CODES = {
    403: "forbidden",
    414: "uri-too-long",
    431: "headers-too-large",
    500: "persistence-error",
    501: "not-implemented",
}


def json_error(status_int: int, reason: str, mesg: str, extra: str = "") -> bytes:
    """A whole HTTP/1.1 answer of `status_int` in the error shape (`extra`: header lines)."""
    code = CODES.get(status_int, "validation-error")
    message = mesg or (
        "The server failed to complete the request." if status_int >= 500 else reason
    )
    body = json.dumps({"code": code, "message": message, "details": None}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"{extra}"
        "\r\n"
    )
    return head.encode("latin-1") + body
