"""gunicorn's configuration for the web process:
`gunicorn -c python:config.gunicorn_conf config.wsgi` (`kindmem run`, the Dockerfile and
docker-compose.yml all start it so).

gunicorn refuses some requests itself, before kindmem sees them: a request line or a header
over its limits (414, 431), a malformed request line or header (400), and answers 500 when a
worker fails outside the application. It writes those in HTML, and raising its limits does
not avoid that: even "unlimited" stops at 1 MB for a request line and 8190 bytes for a header
field. So its limits stay where they are (bounded memory per request, written out here) and
its error writer is replaced by one that answers in kindmem's error shape
(`{"code", "message", "details"}`), so every error an API client can meet is JSON.

Replacing `gunicorn.util.write_error` is a patch of gunicorn's internals: its workers call it
through the module (`util.write_error(...)`) from `Worker.handle_error`, for every kind of
worker. tests/kindmem/test_wsgi.py runs a real gunicorn with this file, so an upgrade that
moves it fails there, not in production.
"""

from __future__ import annotations

import gc
import json
import logging
import socket
import threading
from typing import Any

from gunicorn import util

logger = logging.getLogger(__name__)

wsgi_app = "config.wsgi"

# gunicorn's defaults, written out: the API's longest request line (a list with every filter
# and a cursor) stays well within them.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190

# Codes as in api/errors.py; any other 4xx gunicorn answers is a malformed request.
CODES = {
    403: "forbidden",
    414: "uri-too-long",
    431: "headers-too-large",
    500: "persistence-error",
    501: "not-implemented",
}


def write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error`, answering in the error shape instead of HTML."""
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
        "\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


util.write_error = write_json_error


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
