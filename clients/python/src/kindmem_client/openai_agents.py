"""`KindmemSession`: an OpenAI Agents SDK session kept in a kindmem conversation
(extra `kindmem-client[openai-agents]`).

An Agents SDK app keeps its history in kindmem, and so gets kindmem's recall (its earlier
conversations found by keyword or meaning, `POST /v1/recall`), its reader guard, audit, subject
access and erasure with it:

    from agents import Agent, Runner
    from kindmem_client import AsyncClient
    from kindmem_client.openai_agents import KindmemSession

    kindmem = AsyncClient(RUN_TOKEN, base_url=URL)  # a run minted for thread "conv-1"
    session = KindmemSession("conv-1", kindmem)
    await Runner.run(agent, "Where is my parcel?", session=session)

How a session is a kindmem conversation
---------------------------------------

=====================  ========================================================================
Agents SDK             kindmem
=====================  ========================================================================
``session_id``         the conversation id (the run's ``thread_id``); a run token writes only
                       to its own thread, an app key to its projects' conversations, naming
                       ``agent_id`` and ``project_id`` (and the end user) for a new one
one input item         one message, in order: its ``data`` is the item exactly as given (ids,
                       parts, tool calls and all), so ``get_items`` answers what was added;
                       its ``role`` and ``text`` are what recall searches
a user message         role ``user``, text its text (``input_text`` parts joined)
an assistant message   role ``agent``, text its ``output_text`` (and refusal) parts joined
anything else          role ``tool`` (stored, never indexed or recalled): tool calls and their
                       outputs, reasoning, system and developer messages; text says which
``get_items(limit)``   ``GET /v1/conversations/{id}/messages``, the latest ``limit`` items in
                       order (all without one, or with ``session_settings.limit``)
``add_items``          ``POST /v1/conversations/{id}/messages``, up to 100 items a request
``pop_item``           ``DELETE /v1/conversations/{id}/messages/{sequence}`` of the newest
``clear_session``      ``DELETE /v1/conversations/{id}/messages``
a turn's end           with ``extract_after_turn=True``: ``POST /v1/conversations/{id}/extract``
                       once ``add_items`` has saved an assistant message (the turn's answer)
=====================  ========================================================================

With ``extract_after_turn``, kindmem's chat model turns the new messages into memories in the
background (under remember's review rules; a change to an existing memory is a proposal for a
reviewer). The history is saved whatever that request answers: its answer, or the error
(``ExtractionUnavailable`` without a chat model, ``ExtractionQuota`` past a cap), is kept in
``last_extraction``, never raised into the agent's turn.

A message that another writer appended without ``data`` (the REST API, the MCP server) reads
as ``{"role": "user" | "assistant", "content": text}``; a tool message without it is not an
item. A conversation that does not exist yet, or that an erasure holds, has no items. The text
recall indexes is cut at kindmem's 20,000 characters (the item in ``data`` is whole); an item
over 256 KiB of JSON is refused (``ValidationError``). Deleting never reuses a sequence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

try:
    from agents.memory import SessionABC, SessionSettings
    from agents.memory.session_settings import resolve_session_limit
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "kindmem_client.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'kindmem-client[openai-agents]'"
    ) from missing

from kindmem_client._async import AsyncClient
from kindmem_client._sync import Client
from kindmem_client.errors import KindmemError, NotFound
from kindmem_client.types import Message, MessageInput

__all__ = ["KindmemSession", "item_of", "message_of"]

MAX_TEXT_CHARS = 20_000  # kindmem's longest message text
MAX_BATCH = 100  # messages per append
MAX_REQUEST_BYTES = 900_000  # under KINDMEM_MAX_BODY_BYTES' default (1 MiB), with room to spare
PAGE = 200  # the largest page of GET .../messages

Item = dict[str, Any]

_USER_PARTS = ("input_text", "text")
_AGENT_PARTS = ("output_text", "text")


def _text_of(content: Any, kinds: Sequence[str]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") in kinds and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
    return "\n".join(parts)


def _placeholder(item: Item) -> str:
    """What a message's text says of an item with no words of its own."""
    content = item.get("content")
    if isinstance(content, list):
        kinds = [str(p.get("type")) for p in content if isinstance(p, dict) and p.get("type")]
        if kinds:
            return " ".join(f"[{kind}]" for kind in kinds)
    named = [str(item[k]) for k in ("name", "call_id") if isinstance(item.get(k), str)]
    return " ".join([str(item.get("type") or item.get("role") or "item"), *named])


def message_of(item: Item) -> MessageInput:
    """The kindmem message that keeps `item`: role and text for recall, the item as data."""
    kind = item.get("type", "message")
    role = item.get("role")
    text = ""
    if kind == "message" and role == "user":
        kindmem_role, text = "user", _text_of(item.get("content"), _USER_PARTS)
    elif kind == "message" and role == "assistant":
        kindmem_role, text = "agent", _text_of(item.get("content"), _AGENT_PARTS)
    else:
        # tool calls and outputs, reasoning, system and developer messages: kept, not recalled
        kindmem_role = "tool"
    text = text.strip() or _placeholder(item)
    return {"role": kindmem_role, "text": text[:MAX_TEXT_CHARS], "data": item}  # type: ignore[typeddict-item]


def item_of(message: Message) -> Item | None:
    """The input item a kindmem message holds: its data, or one made from its role and text
    (a message written without data); None for a tool message without data."""
    if isinstance(message.get("data"), dict):
        return message["data"]
    if message["role"] == "user":
        return {"role": "user", "content": message["text"]}
    if message["role"] == "agent":
        return {"role": "assistant", "content": message["text"]}
    return None


def _batches(messages: list[MessageInput]) -> list[list[MessageInput]]:
    """The messages in appends kindmem takes: at most 100, and a body under its size limit."""
    batches: list[list[MessageInput]] = []
    current: list[MessageInput] = []
    size = 0
    for message in messages:
        weight = len(json.dumps(message, ensure_ascii=False).encode()) + 2
        if current and (len(current) >= MAX_BATCH or size + weight > MAX_REQUEST_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(message)
        size += weight
    if current:
        batches.append(current)
    return batches


class KindmemSession(SessionABC):
    """An Agents SDK session whose items are the messages of kindmem conversation
    `session_id` (the mapping is the module docstring).

    `client` is an `AsyncClient` (or a sync `Client`, run in a worker thread) with a run token
    minted for the thread `session_id`, or an app key; with an app key, `agent_id` and
    `project_id` (and `participant_id`: whose conversation it is) create the conversation on
    its first item (an app key names no Kindgi user: a `user_id` is refused, 403; a person's
    own conversation is written with a run that person's key minted).
    `session_settings.limit` is `get_items`'s default limit.
    `extract_after_turn` asks kindmem to extract memories once a turn's answer is saved.
    """

    def __init__(
        self,
        session_id: str,
        client: AsyncClient | Client,
        *,
        agent_id: str | None = None,
        project_id: str | None = None,
        participant_id: str | None = None,
        user_id: str | None = None,
        session_settings: SessionSettings | None = None,
        extract_after_turn: bool = False,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self.extract_after_turn = extract_after_turn
        # the last extraction a turn asked for: the route's answer, or the error it raised
        self.last_extraction: dict[str, Any] | KindmemError | None = None
        self._client = client
        self._start = {
            "agent_id": agent_id,
            "project_id": project_id,
            "participant_id": participant_id,
            "user_id": user_id,
        }

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(self._client, method)
        if isinstance(self._client, AsyncClient):
            return await bound(*args, **kwargs)
        return await anyio.to_thread.run_sync(lambda: bound(*args, **kwargs))

    async def _pages(self, want: int | None) -> list[Message]:
        """The conversation's newest messages, enough for `want` items (None: all), in order."""
        messages: list[Message] = []
        items = 0
        before: int | None = None
        while True:
            try:
                page = await self._call(
                    "list_messages", self.session_id, before_sequence=before, limit=PAGE
                )
            except NotFound:
                return []  # no conversation yet (or one an erasure holds): no items
            messages[:0] = page["messages"]
            items += sum(1 for m in page["messages"] if item_of(m) is not None)
            before = page["next_before_sequence"]
            if before is None or (want is not None and items >= want):
                return messages

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The conversation's items in order; the latest `limit` of them when given (or
        `session_settings.limit`)."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit <= 0:
            return []
        items = [item for m in await self._pages(limit) if (item := item_of(m)) is not None]
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[Item]) -> None:
        """Append the items, in order, as the conversation's next messages."""
        messages = [message_of(dict(item)) for item in items]
        start = {k: v for k, v in self._start.items() if v is not None}
        for batch in _batches(messages):
            await self._call("append_messages", self.session_id, batch, **start)
        if self.extract_after_turn and any(m["role"] == "agent" for m in messages):
            try:
                self.last_extraction = await self._call("extract", self.session_id)
            except KindmemError as refused:  # the turn is saved; its extraction waits
                self.last_extraction = refused

    async def pop_item(self) -> Item | None:
        """Delete the newest item and return it; None when there is none."""
        for _attempt in range(5):
            messages = await self._pages(1)
            newest = next((m for m in reversed(messages) if item_of(m) is not None), None)
            if newest is None:
                return None
            try:
                deleted = await self._call("delete_message", self.session_id, newest["sequence"])
            except NotFound:
                continue  # another writer took it first: the newest is another one now
            return item_of(deleted["message"])
        return None

    async def clear_session(self) -> None:
        """Delete every item (the conversation stays; kindmem never reuses its sequences)."""
        try:
            await self._call("clear_messages", self.session_id)
        except NotFound:
            return  # nothing was ever written
