"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted per test: what the
extraction tests (and README's, under `kindmem run`) talk to instead of a model. It answers
`POST /v1/chat/completions` from its script, or from a function of what the request showed
the model, and `GET /v1/models`; it records every request."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status, a JSON body (or raw bytes), headers, after a delay."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0


def completion(
    content: Any,
    *,
    prompt_tokens: int | None = 120,
    completion_tokens: int | None = 30,
    refusal: str | None = None,
    finish_reason: str = "stop",
    model: str = "fake-llm-1",
) -> Reply:
    """A chat completion whose message is `content` (JSON-encoded unless it is a string)."""
    text = content if isinstance(content, str) or content is None else json.dumps(content)
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": refusal},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Reply(body=body)


def shown(payload: dict[str, Any]) -> dict[str, Any]:
    """The document a chat request showed the model (its user message, parsed)."""
    [user] = [m for m in payload["messages"] if m["role"] == "user"]
    return json.loads(user["content"])


NOTHING = {"action": "none", "type": None, "memory_id": None, "text": None, "cites": []}


def add(type_: str, text: str, cites: list[int]) -> dict[str, Any]:
    return {"action": "add", "type": type_, "memory_id": None, "text": text, "cites": cites}


def update(memory_id: str, text: str, cites: list[int], type_: str | None = None) -> dict[str, Any]:
    return {"action": "update", "type": type_, "memory_id": memory_id, "text": text, "cites": cites}


@dataclass
class ChatServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Replies handed out in order; when they run out, `default` answers (from the request).
    script: list[Reply] = field(default_factory=list)
    default: Callable[[dict[str, Any]], Reply] | None = None

    def answer(self, decide: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
        """Answer every chat request with the decisions `decide` makes of what it was shown."""
        self.default = lambda payload: completion({"decisions": decide(shown(payload))})

    @property
    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]


@contextmanager
def chat_server_running() -> Iterator[ChatServer]:
    """The server, answering "nothing to remember" until told otherwise, for the block."""
    state = ChatServer(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, payload: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            with lock:
                state.requests.append({"path": self.path, "headers": headers, "json": payload})
                if state.script:
                    reply = state.script.pop(0)
                elif self.command == "GET":
                    reply = Reply(body={"object": "list", "data": [{"id": "fake-llm-1"}]})
                else:
                    assert state.default is not None, "no reply scripted for this request"
                    reply = state.default(payload)
            if reply.delay_seconds:
                time.sleep(reply.delay_seconds)
            body = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the timeout tests)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self._reply(json.loads(self.rfile.read(length)))

        def do_GET(self) -> None:
            self._reply(None)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    state.default = lambda payload: completion({"decisions": [NOTHING]})
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
