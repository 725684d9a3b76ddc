"""A scripted stand-in for a chat model, so that a newcomer can watch an extraction go through
review end to end without standing up a model server: `kindmem run --scripted-model` (README
"Try extraction") starts it on a loopback port and points extraction at it.

It is not a language model and says so everywhere it can: its model name (which every job, its
API answer and the console's extraction pages show) is `SCRIPTED_MODEL`, and every answer
carries a `scripted` note beside its decisions (extraction reads only the decisions). It serves
the OpenAI-compatible routes extraction calls (`POST /v1/chat/completions`, `GET /v1/models`)
over real HTTP, and decides by a handful of fixed sentence patterns of the person's messages
("I prefer ...", "I'm allergic to ...", "I moved to ...", "call me ..."): each match is an `add`
of the first declared memory type, in the third person, citing its message.

    python -m config.scripted_model --port 8010
"""

from __future__ import annotations

import argparse
import json
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCRIPTED_MODEL = "kindmem-scripted-demo (not a language model)"
NOTE = (
    "This answer was written by kindmem's scripted demo model, which matches fixed sentence "
    "patterns; it is not a language model. Set KINDMEM_LLM_URL and KINDMEM_LLM_MODEL to use one."
)
# A request body larger than this is refused (a prompt is a few kilobytes).
MAX_BODY = 1 << 20

# (pattern of a sentence the person wrote, the memory it becomes)
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bI\s+(?:really\s+)?prefer\s+(?P<x>[^.!?\n]+)", re.I), "Prefers {x}."),
    (re.compile(r"\bI\s+(?:really\s+)?(?:like|love|enjoy)\s+(?P<x>[^.!?\n]+)", re.I), "Likes {x}."),
    (
        re.compile(r"\bI(?:'m|\s+am)\s+allergic\s+to\s+(?P<x>[^.!?\n]+)", re.I),
        "Is allergic to {x}.",
    ),
    (
        re.compile(r"\bI(?:'ve|\s+have)?\s+(?:just\s+)?moved\s+to\s+(?P<x>[^.!?\n]+)", re.I),
        "Lives in {x}.",
    ),
    (re.compile(r"\bI\s+live\s+in\s+(?P<x>[^.!?\n]+)", re.I), "Lives in {x}."),
    (re.compile(r"\bcall\s+me\s+(?P<x>[^.!?\n]+)", re.I), "Prefers to be called {x}."),
]
_FIRST_PERSON = {r"\bmy\b": "their", r"\bme\b": "them", r"\bI\b": "they", r"\bmine\b": "theirs"}


# When the person said it, which the memory leaves out ("I moved to Porto last month").
_WHEN = re.compile(
    r"\s+(?:now|today|yesterday|recently|last\s+(?:week|month|year)|this\s+(?:week|month|year))$",
    re.I,
)


def third_person(text: str) -> str:
    for pattern, replacement in _FIRST_PERSON.items():
        text = re.sub(pattern, replacement, text, flags=re.I)
    return _WHEN.sub("", text.strip())


def decisions_for(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted decisions for the prompt's JSON document (extraction/prompt.py)."""
    types = [t.get("type") for t in document.get("memory_types", []) if isinstance(t, dict)]
    messages = document.get("messages", [])
    out: list[dict[str, Any]] = []
    if types and isinstance(messages, list):
        for message in messages:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            text = str(message.get("text", ""))
            for pattern, template in PATTERNS:
                for match in pattern.finditer(text):
                    memory = template.format(x=third_person(match.group("x")))
                    out.append(
                        {
                            "action": "add",
                            "type": types[0],
                            "memory_id": None,
                            "text": memory,
                            "cites": [message.get("id")],
                        }
                    )
    if not out:
        out.append({"action": "none", "type": None, "memory_id": None, "text": None, "cites": []})
    return out


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat completion answering `body` (a chat-completions request)."""
    document: dict[str, Any] = {}
    for message in body.get("messages", []):
        if isinstance(message, dict) and message.get("role") == "user":
            try:
                parsed = json.loads(message.get("content") or "")
            except (TypeError, ValueError):
                continue
            if isinstance(parsed, dict):
                document = parsed
    answer = {"decisions": decisions_for(document), "scripted": NOTE}
    content = json.dumps(answer)
    return {
        "id": f"scripted-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": SCRIPTED_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": len(json.dumps(body)) // 4,
            "completion_tokens": len(content) // 4,
            "total_tokens": (len(json.dumps(body)) + len(content)) // 4,
        },
    }


class _Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": SCRIPTED_MODEL, "object": "model", "owned_by": "kindmem", "note": NOTE}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, {"error": {"message": "Not found.", "note": NOTE}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "Not found.", "note": NOTE}})
            return
        if length > MAX_BODY:
            self._send(413, {"error": {"message": "Request too large.", "note": NOTE}})
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "Not JSON.", "note": NOTE}})
            return
        self._send(200, completion(body if isinstance(body, dict) else {}))

    def log_message(self, format: str, *args: Any) -> None:  # quiet: kindmem run's console
        return


def server(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The scripted model's HTTP server, bound (port 0: a free one), not yet serving."""
    httpd = ThreadingHTTPServer((host, port), _Handler)
    httpd.daemon_threads = True
    return httpd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8010)
    args = parser.parse_args()
    server(args.host, args.port).serve_forever()


if __name__ == "__main__":
    main()
