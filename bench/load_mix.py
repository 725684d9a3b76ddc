"""The request mix of bench/load.py: a client thread (its own HTTP client, run token,
conversation and console session) calling search, writes, reads, recall and console pages at
random, each call timed into its level's `Recorder`."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx

AGENT = "support-bot"
QUERIES = [
    "dark mode",
    "mobile app",
    "refund",
    "refunds within 30 days",
    "language",
    "portuguese answers",
    "billing plan",
    "pro plan yearly",
    "tea",
    "coffee",
    "green tea in the morning",
    "parcel never arrived",
    "shipping delay",
    "support ticket",
    "note",
]
DRINKS = ["tea", "coffee", "green tea", "hot chocolate", "sparkling water", "lemonade"]
# two pages a reviewer opens (bench/console_pages.py): the review queue and the facts list
CONSOLE_PAGES = ["/console/approvals/approval/", "/console/facts/fact/"]
OK = {200, 201, 302}


@dataclass
class Call:
    surface: str  # rest, mcp or console
    op: str
    status: int | str  # the HTTP status, `tool:<code>` for an MCP tool error, `exc:<name>`
    seconds: float


@dataclass
class Recorder:
    """The calls of one level that ended inside its measured window."""

    start: float
    end: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[Call] = field(default_factory=list)
    samples: dict[int | str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, call: Call, ended: float, sample: str = "") -> None:
        if not self.start <= ended <= self.end:
            return
        with self.lock:
            self.calls.append(call)
            if call.status not in OK and len(self.samples[call.status]) < 3:
                self.samples[call.status].append(f"{call.op}: {sample[:200]}")


class LoadClient:
    """One client thread: its own HTTP client, run token, conversation and console session."""

    def __init__(
        self, n: int, level: int, base: str, creds: dict[str, Any], seed: int, rec: Recorder
    ) -> None:
        self.n, self.base, self.creds, self.rec = n, base, creds, rec
        self.rng = random.Random(f"{seed}-{level}-{n}")
        self.participant = f"load-{level}-{n}"
        self.thread = f"load-{level}-{n}-{uuid.uuid4().hex[:8]}"
        self.http = httpx.Client(base_url=base, timeout=120)
        # the console's cookies in a jar of their own (a cookie names a host, not a port)
        self.console = httpx.Client(base_url=base, timeout=120)
        self.token = ""
        self.seen: list[str] = []
        self.appended = False
        self.logged_in = False
        self.rpc_id = 0
        self.i = 0

    # ---- one request, timed and recorded ------------------------------------------------------

    def rest(
        self, op: str, method: str, path: str, *, token: str = "", body: Any = None
    ) -> tuple[int | str, Any]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        started = time.monotonic()
        try:
            response = self.http.request(method, path, headers=headers, json=body)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            status: int | str = f"exc:{type(error).__name__}"
            self.rec.add(Call("rest", op, status, ended - started), ended, repr(error))
            return status, None
        ended = time.monotonic()
        self.rec.add(Call("rest", op, response.status_code, ended - started), ended, response.text)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return response.status_code, answer

    def mcp(self, op: str, tool: str, arguments: dict[str, Any]) -> tuple[int | str, Any]:
        self.rpc_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.rpc_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
        }
        started = time.monotonic()
        try:
            response = self.http.post(self.creds["mcp"], headers=headers, json=body)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            status: int | str = f"exc:{type(error).__name__}"
            self.rec.add(Call("mcp", op, status, ended - started), ended, repr(error))
            return status, None
        ended = time.monotonic()
        status, result = response.status_code, None
        if status == 200:
            try:
                answer = response.json()
            except ValueError:
                status = "mcp:not-json"
            else:
                result = answer.get("result")
                if result is None:
                    status = f"jsonrpc:{answer.get('error', {}).get('code')}"
                elif result.get("isError"):
                    code = (result.get("structuredContent") or {}).get("code", "unknown")
                    status = f"tool:{code}"
        self.rec.add(Call("mcp", op, status, ended - started), ended, response.text)
        structured = (result or {}).get("structuredContent") if status == 200 else None
        return status, structured

    def page(self, op: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        started = time.monotonic()
        try:
            response = self.console.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            ended = time.monotonic()
            call = Call("console", op, f"exc:{type(error).__name__}", ended - started)
            self.rec.add(call, ended, repr(error))
            return None
        ended = time.monotonic()
        status: int | str = response.status_code
        if op != "console-login" and status == 302:
            status = "console:to-login"  # the session was lost: a page redirects to the login
        sample = response.headers.get("location", "") or response.text[:200]
        self.rec.add(Call("console", op, status, ended - started), ended, sample)
        return response

    # ---- the operations -------------------------------------------------------------------------

    def mint(self) -> bool:
        for attempt in range(10):
            status, body = self.rest(
                "mint-run",
                "POST",
                "/v1/runs",
                token=self.creds["keys"]["app"],
                body={
                    "agent_id": AGENT,
                    "project_id": self.creds["project"],
                    "participant_id": self.participant,
                    "thread_id": self.thread,
                },
            )
            if status == 201:
                self.token = body["token"]
                return True
            time.sleep(0.2 * (attempt + 1))
        return False

    def see(self, facts: list[dict[str, Any]]) -> None:
        self.seen.extend(f["id"] for f in facts if isinstance(f, dict) and "id" in f)
        del self.seen[:-50]

    def search(self) -> None:
        query = self.rng.choice(QUERIES)
        if self.rng.random() < 1 / 3:
            args = {"query": query, "mode": "hybrid", "top_k": 10}
            status, body = self.mcp("search-mcp", "search_memories", args)
        else:
            body = {"query": query, "mode": "hybrid", "top_k": 10}
            status, body = self.rest("search", "POST", "/v1/facts/search", body=body)
        if status == 200 and body:
            self.see([hit.get("fact", {}) for hit in body.get("hits", [])])

    def remember(self) -> None:
        status, body = self.rest(
            "remember",
            "POST",
            "/v1/remember",
            body={
                "type": "preference",
                "text": f"Client {self.n} prefers {self.rng.choice(DRINKS)}, say {self.i}.",
                "tool_call_id": uuid.uuid4().hex,
            },
        )
        if status == 201 and body and body.get("approval_id") is None:
            self.see([body.get("fact", {})])
        elif (
            status == 409 and isinstance(body, dict) and body.get("code") == "memory-limit-reached"
        ):
            self.mint()  # a run writes at most KINDMEM_MAX_MEMORIES_PER_RUN: a new run

    def write(self) -> None:
        status, body = self.rest(
            "write-fact",
            "POST",
            "/v1/facts",
            token=self.creds["keys"]["admin"],
            body={
                "type": "note",
                "content": f"load client {self.n} note {self.i}: asked about "
                f"{self.rng.choice(QUERIES)} ({uuid.uuid4().hex[:8]})",
                "scope": {"project_id": self.creds["project"]},
            },
        )
        if status == 201 and body:
            self.see([body.get("fact", {})])

    def list_facts(self) -> None:
        if self.rng.random() < 1 / 3:
            status, body = self.mcp("list-mcp", "list_memories", {"limit": 20})
        else:
            status, body = self.rest("list", "GET", "/v1/facts?limit=20")
        if status == 200 and body:
            self.see(body.get("facts", []))

    def get_fact(self) -> None:
        if not self.seen:
            self.list_facts()
            return
        self.rest("get", "GET", f"/v1/facts/{self.rng.choice(self.seen)}")

    def recall(self) -> None:
        if not self.appended:
            status, _ = self.rest(
                "append-messages",
                "POST",
                f"/v1/conversations/{self.thread}/messages",
                body={
                    "messages": [
                        {"role": "user", "text": f"My parcel never arrived, I drink {d}."}
                        for d in self.rng.sample(DRINKS, 2)
                    ]
                    + [{"role": "agent", "text": "I opened a refund for the parcel."}]
                },
            )
            self.appended = status == 201
        self.rest(
            "recall",
            "POST",
            "/v1/recall",
            body={
                "selections": [{"agent_id": AGENT}],
                "mode": "keyword",
                "query": self.rng.choice(QUERIES),
                "top_k": 10,
            },
        )

    def login(self) -> bool:
        """The admin's console session: the login page (its csrftoken cookie), then the form."""
        form = self.page("console-login", "GET", "/console/login/?next=/console/")
        token = self.console.cookies.get("csrftoken")
        if form is None or form.status_code != 200 or not token:
            return False
        answer = self.page(
            "console-login",
            "POST",
            "/console/login/",
            data={
                "csrfmiddlewaretoken": token,
                "username": "admin",
                "password": self.creds["passwords"]["admin"],
                "next": "/console/",
            },
        )
        return answer is not None and answer.status_code == 302 and "sessionid" in answer.cookies

    def console_pages(self) -> None:
        if not self.logged_in:
            self.logged_in = self.login()
            if not self.logged_in:
                return
        front = self.page("console-front", "GET", "/console/")
        listing = self.page("console-list", "GET", self.rng.choice(CONSOLE_PAGES))
        if any(r is not None and r.status_code == 302 for r in (front, listing)):
            self.logged_in = False

    def one(self) -> None:
        self.i += 1
        draw = self.rng.random()
        if draw < 0.60:
            self.search()
        elif draw < 0.675:
            self.remember()
        elif draw < 0.75:
            self.write()
        elif draw < 0.825:
            self.list_facts()
        elif draw < 0.90:
            self.get_fact()
        elif draw < 0.95:
            self.recall()
        else:
            self.console_pages()

    def run(self, until: float) -> None:
        try:
            if not self.mint():
                return
            while time.monotonic() < until:
                self.one()
        finally:
            self.http.close()
            self.console.close()
