"""The MCP server's process: `python -m config.mcp_serve --host H --port P --workers N`, as
`kindmem run` and docker-compose start it.

uvicorn serves `config.asgi:mcp_application` (the MCP server at `/mcp` alone: the API and the
console are the web's, behind gunicorn's hardening) with a connection protocol of its own
(`HeadDeadlineH11Protocol`), because uvicorn's h11 protocol, as shipped, waits for a request head
for ever and answers a malformed one in plain text. Here, as on the web (config/gunicorn_conf.py):

- a request head must be whole within KINDMEM_HEAD_TIMEOUT_SECONDS of the connection opening, or
  of the previous answer on a kept-alive one (408 in the error shape, closed): a client
  trickling a header a second holds its socket for that long, not for ever;
- a head h11 cannot parse is answered 400 in the error shape, not in text.

uvicorn's command line offers only its own protocols (`--http auto|h11|httptools`), so the
class is handed to `uvicorn.run` here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from config.raw_errors import json_error

HEAD_TIMEOUT_SECONDS = float(os.environ.get("KINDMEM_HEAD_TIMEOUT_SECONDS") or 10)


class HeadDeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 connection, closed (408) when a request head is not whole in time, and
    answering a malformed head in the error shape."""

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_head_deadline()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # a whole head has arrived
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_head_deadline()  # the next head of a kept-alive connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        self._cancel_head_deadline()
        self.transport.write(json_error(400, "Bad Request", "The request head is not HTTP."))
        self.transport.close()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_late)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        message = f"The request head did not arrive within {HEAD_TIMEOUT_SECONDS:g} s."
        self.transport.write(json_error(408, "Request Timeout", message))
        self.transport.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m config.mcp_serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    uvicorn.run(
        "config.asgi:mcp_application",
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        http=HeadDeadlineH11Protocol,
        # a shutdown waits this long for open requests (an event stream is one), then closes
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
