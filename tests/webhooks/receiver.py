"""A real webhook receiver on 127.0.0.1, scripted per test (as tests/extraction/chat_server.py
is for the chat model): it records every POST (headers and the body's bytes exactly as they
came), answers each from its script (a status, after a delay) or 204, and can be stopped and
started again on the same port (a receiver that is down, then back)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 204
    delay_seconds: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int
    received: list[Received] = field(default_factory=list)
    script: list[Answer] = field(default_factory=list)
    # set whenever a request has arrived (before it is answered)
    arrived: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        state = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    state.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    answer = state.script.pop(0) if state.script else Answer()
                state.arrived.set()
                if answer.delay_seconds:
                    time.sleep(answer.delay_seconds)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender gave up waiting (the timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def wait_for(self, count: int, seconds: float = 30) -> list[Received]:
        deadline = time.monotonic() + seconds
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"{len(self.received)} of {count} arrived"
            time.sleep(0.02)
        return self.received


@contextmanager
def receiver_running(port: int = 0) -> Iterator[Receiver]:
    receiver = Receiver(port=port)
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.stop()
