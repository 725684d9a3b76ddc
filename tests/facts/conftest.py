"""Fixtures for the facts tests: a real OpenAI-compatible embeddings server on 127.0.0.1,
scripted per test; direct row inserts for the property tests (fast, no service checks)."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from embeddings.providers import DIMENSIONS
from facts.models import Revision, Subject
from facts.provenance import content_hash
from tests import factories


def vector_for(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A deterministic, not normalised vector, so the client's own scaling is exercised."""
    seed = sum(text.encode()) % 97 + 1
    return [float((seed * (i + 1)) % 13 - 6) for i in range(dimensions)]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(v * v for v in vector))


@dataclass
class Reply:
    """One scripted answer: a status and JSON body, after an optional delay."""

    status: int = 200
    body: Any = None
    delay_seconds: float = 0.0
    truncate: bool = False  # announce the full length, send half, close the connection


@dataclass
class EmbeddingsServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Replies handed out in order; when they run out, `default` answers.
    script: list[Reply] = field(default_factory=list)
    default: Callable[[dict[str, Any]], Reply] | None = None


def well_formed(payload: dict[str, Any], *, reverse: bool = True) -> Reply:
    """What an OpenAI server answers, its items deliberately out of order."""
    items = [
        {"object": "embedding", "index": i, "embedding": vector_for(text)}
        for i, text in enumerate(payload["input"])
    ]
    if reverse:
        items.reverse()
    return Reply(body={"object": "list", "data": items, "model": payload["model"]})


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    server_state = EmbeddingsServer(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length))
            with lock:
                server_state.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": payload}
                )
                if server_state.script:
                    reply = server_state.script.pop(0)
                else:
                    assert server_state.default is not None
                    reply = server_state.default(payload)
            if reply.delay_seconds:
                time.sleep(reply.delay_seconds)
            body = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if reply.truncate else body)
                if reply.truncate:
                    self.close_connection = True
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the timeout tests)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    server_state.default = well_formed
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()


def fact_insert(
    tenant: Any, *, content: Any = "a fact", subjects: tuple = (), **fields: Any
) -> Revision:
    """One fact with one current revision, written straight to the tables."""
    revision_fields = {
        k: fields.pop(k)
        for k in ("review", "expires_at", "valid_from", "valid_until", "keep_days", "legal_hold")
        if k in fields
    }
    fields.setdefault("type", "note")
    fact = factories.fact_create(tenant, **fields)
    revision = factories.revision_create(
        fact,
        content=content,
        content_hash=content_hash(content, None, None),
        search_text=str(content),
        **revision_fields,
    )
    Subject.objects.bulk_create(
        Subject(tenant=tenant, revision=revision, fact=fact, kind=k, subject_id=i)
        for k, i in subjects
    )
    return revision


def create(api: Any, keyed: Any, **body: Any) -> Any:
    """`POST /v1/facts` as `keyed` (the API tests' write): a preference unless told."""
    body.setdefault("type", "preference")
    body.setdefault("content", {"text": "likes green tea"})
    return api.post("/v1/facts", body, format="json", **keyed.headers)


def participant_scope(world: Any, participant: str = "p-1") -> dict[str, str]:
    return {"project_id": str(world.project.id), "participant_id": participant}
