"""gunicorn's configuration for the web process:
`gunicorn -c python:config.gunicorn_conf config.asgi:application` (`kindmem run`, the
Dockerfile and docker-compose.yml all start it so).

**Workers that no client can pin.** gunicorn's `asgi` worker: one asyncio event loop per
process reads every connection's request head and body, and only a whole request reaches
kindmem (config/asgi.py: Django, each request's synchronous code in a thread of its own, its
database connections from the process's bounded pool, config/pool.py; at most
KINDMEM_MAX_IN_FLIGHT at once, config/admission.py). A client that sends its head a byte at a
time, or never finishes it, holds a socket and a few kilobytes, not a worker: the sync workers
this replaces read each head in the worker itself, and four such clients stalled the API and
the console for everyone. (The `gthread` worker is no answer: it reads the head in one of its
threads, blocking, once the first byte is in.) bench/README.md has the measurement.

gunicorn refuses some requests itself, before kindmem sees them: a request line or a header
over its limits (414, 431), a malformed request line or header (400), and answers 500 when a
worker fails outside the application. It writes those in plain text, and raising its limits
does not avoid that: even "unlimited" stops at 1 MB for a request line and 8190 bytes for a
header field. So its limits stay where they are (bounded memory per request, written out here)
and its error writers are replaced by ones that answer in kindmem's error shape
(`{"code", "message", "details"}`), so every error an API client can meet is JSON.

Replacing `gunicorn.util.write_error` (the sync and threaded workers' writer) and
`ASGIProtocol._send_error_response` (the asgi worker's) patches gunicorn's internals.
tests/kindmem/test_wsgi.py runs a real gunicorn with this file, so an upgrade that moves them
fails there, not in production.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
from http import HTTPStatus
from typing import Any

from gunicorn import util
from gunicorn.asgi import protocol as asgi_protocol
from gunicorn.workers import gasgi

from config.raw_errors import json_error

logger = logging.getLogger(__name__)

wsgi_app = "config.asgi:application"
worker_class = "asgi"
# How long a kept-alive connection may sit idle, and a request's body may stall, before gunicorn
# closes it (seconds); a worker that stops answering its arbiter this long is restarted.
keepalive = 5
timeout = 30

# gunicorn's defaults, written out: the API's longest request line (a list with every filter
# and a cursor) stays well within them.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190


def write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error`, answering in the error shape instead of HTML."""
    util.write_nonblock(sock, json_error(status_int, reason, mesg))


def send_json_error(self: Any, status: int, message: str, extra_headers: Any = ()) -> None:
    """The asgi worker's `ASGIProtocol._send_error_response`, in the error shape."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    extra = "".join(f"{name}: {value}\r\n" for name, value in extra_headers)
    self._safe_write(json_error(status, reason, message, extra))


util.write_error = write_json_error
asgi_protocol.ASGIProtocol._send_error_response = send_json_error

# A connection's first request head must be whole within this many seconds (408, closed); the
# heads after it are bounded by `keepalive`, whose timer gunicorn arms after each answer. A head
# that never ends holds no worker here, but would hold its socket for ever.
HEAD_TIMEOUT_SECONDS = float(os.environ.get("KINDMEM_HEAD_TIMEOUT_SECONDS") or 10)


class HeadDeadlineProtocol(asgi_protocol.ASGIProtocol):
    """The asgi worker's connection, closed (408) when its first head is not whole in time."""

    _head_deadline: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        if self._callback_parser is not None:  # HTTP/1 (HTTP/2 frames have their own timers)
            self._head_deadline = self.worker.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_late)

    def _on_headers_complete(self) -> Any:
        self._cancel_head_deadline()
        return super()._on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self._closed or self._current_request is not None:
            return
        self._send_error_response(
            408, f"The request head did not arrive within {HEAD_TIMEOUT_SECONDS:g} s."
        )
        self._close_transport()
        if self._request_ready is not None:  # wake the connection's loop to see it closed
            self._request_ready.set()


gasgi.ASGIProtocol = HeadDeadlineProtocol


def post_worker_init(worker: Any) -> None:
    """Load the embedder (the local model: a second or more on a loaded machine) as each worker
    starts, beside it in a thread, rather than in the first search or write it serves: that
    request waited for the load, and on a loaded machine past gunicorn's timeout, which killed
    the worker mid-request (a 500)."""
    threading.Thread(target=_warm_embedder, name="kindmem-warm-embedder", daemon=True).start()


def _warm_embedder() -> None:
    from embeddings.providers import get_embedder

    try:
        embedder = get_embedder()
        warm = getattr(embedder, "warm", None)
        if warm is not None:
            warm()
    except Exception:  # a request will meet the same failure and say so; nothing to do here
        logger.warning("could not load the embedder when the worker started", exc_info=True)
        return
    # the model lives as long as the worker: out of the collector's full passes (config/wsgi.py)
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A dead worker's live gauges leave /metrics' sums (prometheus-client's multiprocess mode:
    config/metrics.py); its counters stay counted."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
