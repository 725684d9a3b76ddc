"""The MCP server's tools, each one REST route called in-process (config/mcp_rest.py), on the
SDK's `MCPServer` that config/mcp_server.py serves.

Tools (Mem0's names where one fits): capabilities, remember, search_memories, get_memory,
list_memories, memory_history, update_memory, patch_memory, delete_memory, link_memories,
memory_links, update_link, delete_link, import_memory_file, recall, append_messages,
extract_memories, extractions, and, for a reviewer's or tenant admin's key,
list_pending_approvals and decide_approval (any other credential gets `forbidden`, as from the
REST route).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from api.errors import error_body
from config.mcp_rest import rest, segment

INSTRUCTIONS = """kindmem is your long-term memory. Remember facts about the person and the
conversation with `remember` (a memory that reads like an instruction, or a wide one, waits for
a reviewer before anyone can read it); find them with `search_memories` or `list_memories`;
recall earlier conversations with `recall`. You see only what your credential allows."""


class KindmemMCPServer(MCPServer):
    """The SDK's server, whose own refusals of a tool call (arguments that do not fit the
    tool's schema, a tool that does not exist, a crash) are tool errors in the error shape,
    as the REST route's errors are (config/mcp_rest.py)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            return _tool_error(
                error_body("persistence-error", "The tool failed to complete the call.")
            )
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                details: dict[str, list[str]] = {}
                for err in cause.errors():
                    field = ".".join(str(part) for part in err["loc"]) or "arguments"
                    details.setdefault(field, []).append(err["msg"])
                body = error_body(
                    "validation-error", "The tool's arguments are not valid; see details.", details
                )
            elif self._tool_manager.get_tool(name) is None:
                body = error_body("not-found", f"There is no tool {name!r}.")
            else:
                body = error_body("validation-error", str(exc))
            return _tool_error(body)


def _tool_error(body: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))],
        structured_content=body,
        is_error=True,
    )


server = KindmemMCPServer(
    "kindmem",
    title="kindmem",
    description="The memory of AI agents: typed, versioned, access-controlled facts and recall.",
    instructions=INSTRUCTIONS,
    version="0.1.0",
)

# The hints, per kind of tool. Every tool's world is kindmem's own store: closed.
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
REPLAYABLE_ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
CHANGE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
REMOVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

# What every tool returns: the route's JSON (an object) as structured output; the SDK derives
# the tool's output schema from the second argument.
Result = Annotated[CallToolResult, dict[str, Any]]

MemoryId = Annotated[str, Field(description="The memory's id (a fact id, as returned by a tool).")]
Scope_ = Annotated[
    dict[str, str] | None,
    Field(
        description="Narrow to exact scope keys: org_id, project_id, user_id, participant_id,"
        " thread_id, session_id (within what the credential may read)."
    ),
]


@server.tool(title="Remember", annotations=REPLAYABLE_ADD)
async def remember(
    ctx: Context,
    type: Annotated[str, Field(description="A memory type the agent declares, e.g. preference.")],
    text: Annotated[str, Field(description="What to remember, in a sentence.")],
    tool_call_id: Annotated[
        str, Field(description="This call's id: the same id again returns the first answer.")
    ],
    key: Annotated[
        str | None, Field(description="The slot: a new text for the same key replaces it.")
    ] = None,
    valid_until: Annotated[datetime | None, Field(description="When it stops being true.")] = None,
    step_id: Annotated[str | None, Field(description="The agent's step, for provenance.")] = None,
) -> Result:
    """Remember a fact for this run (a run token only). The scope, subjects and trust come from
    the run and the agent's declaration. Outcome `created`, `superseded` or `replayed`; a
    memory that reads like an instruction, hides characters or is wide waits for review
    (`review.reasons`, `approval_id`) and is unreadable until approved."""
    return await rest(
        ctx,
        "POST",
        "/v1/remember",
        body={
            "type": type,
            "text": text,
            "tool_call_id": tool_call_id,
            "key": key,
            "valid_until": valid_until,
            "step_id": step_id,
        },
    )


@server.tool(title="Search memories", annotations=READ)
async def search_memories(
    ctx: Context,
    query: Annotated[str, Field(description="What to look for, in words.")],
    mode: Annotated[
        Literal["keyword", "semantic", "hybrid"],
        Field(description="keyword (full text), semantic (by meaning) or hybrid (both, fused)."),
    ] = "hybrid",
    top_k: Annotated[int, Field(ge=1, le=100, description="How many hits at most.")] = 10,
    type: Annotated[str | None, Field(description="Only memories of this type.")] = None,
    tags: Annotated[list[str] | None, Field(description="Only memories with all these tags.")] = (
        None
    ),
    valid_at: Annotated[
        datetime | None, Field(description="Only memories true at this time.")
    ] = None,
    scope: Scope_ = None,
    abstain: Annotated[
        bool,
        Field(description="Drop hits under the calibrated relevance floors: maybe no hits."),
    ] = False,
    min_relevance: Annotated[
        float | None,
        Field(description="keyword/semantic: drop hits scoring under this (BM25; cosine)."),
    ] = None,
) -> Result:
    """Search the memories this credential may read; hits best first, each with its memory,
    a score and its rank in each leg."""
    return await rest(
        ctx,
        "POST",
        "/v1/facts/search",
        body={
            "query": query,
            "mode": mode,
            "top_k": top_k,
            "type": type,
            "tags": tags,
            "valid_at": valid_at,
            "scope": scope,
            "abstain": abstain,
            "min_relevance": min_relevance,
        },
    )


@server.tool(title="What kindmem can do here", annotations=READ)
async def capabilities(ctx: Context) -> Result:
    """Probe before calling: the search and recall modes that answer now (semantic ones need
    an embedder), the rerankers, and which tools this credential may use."""
    return await rest(ctx, "GET", "/v1/capabilities")


@server.tool(title="Get a memory", annotations=READ)
async def get_memory(ctx: Context, memory_id: MemoryId) -> Result:
    """One memory's current value (`fact-not-found` if it does not exist or may not be read)."""
    return await rest(ctx, "GET", f"/v1/facts/{segment(memory_id)}")


@server.tool(title="List memories", annotations=READ)
async def list_memories(
    ctx: Context,
    type: Annotated[str | None, Field(description="Only memories of this type.")] = None,
    tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
    valid_at: Annotated[
        datetime | None, Field(description="Only memories true at this time.")
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="Page size.")] = 50,
    cursor: Annotated[
        str | None, Field(description="`next_cursor` of the previous page, for the next one.")
    ] = None,
    scope: Scope_ = None,
) -> Result:
    """The memories this credential may read, newest first, a page at a time."""
    params = {"type": type, "tag": tag, "valid_at": valid_at, "limit": limit, "cursor": cursor}
    return await rest(ctx, "GET", "/v1/facts", params={**params, **(scope or {})})


@server.tool(title="Memory history", annotations=READ)
async def memory_history(ctx: Context, memory_id: MemoryId) -> Result:
    """A memory's revisions, newest first (each change is a new revision; none is lost)."""
    return await rest(ctx, "GET", f"/v1/facts/{segment(memory_id)}/revisions")


@server.tool(title="Update a memory", annotations=CHANGE)
async def update_memory(
    ctx: Context,
    memory_id: MemoryId,
    content: Annotated[Any, Field(description="The new value (text or a JSON object).")],
    expected_version: Annotated[
        int | None,
        Field(ge=1, description="Refuse (`conflict`) if the memory moved past this version."),
    ] = None,
) -> Result:
    """Replace a memory's value with a new revision (the old one stays in its history)."""
    return await rest(
        ctx,
        "POST",
        f"/v1/facts/{segment(memory_id)}/supersede",
        body={"content": content, "expected_version": expected_version},
    )


@server.tool(title="Patch a memory", annotations=CHANGE)
async def patch_memory(
    ctx: Context,
    memory_id: MemoryId,
    patch: Annotated[
        dict[str, Any],
        Field(
            description='A JSON merge patch (RFC 7386) of the memory: {"content": {...}}'
            " (and valid_from / valid_until); null deletes a key, arrays replace, objects"
            " merge. Its type may allow only some content fields to change."
        ),
    ],
    expected_version: Annotated[
        int | None,
        Field(ge=1, description="Refuse (`conflict`) if the memory moved past this version."),
    ] = None,
) -> Result:
    """Change some fields of a memory without resending the rest (a new revision)."""
    return await rest(
        ctx,
        "PATCH",
        f"/v1/facts/{segment(memory_id)}",
        params={"expected_version": expected_version},
        body=patch,
        content_type="application/merge-patch+json",
    )


@server.tool(title="Delete a memory", annotations=REMOVE)
async def delete_memory(ctx: Context, memory_id: MemoryId) -> Result:
    """Delete a memory (`retention-violation` where retention forbids it)."""
    return await rest(ctx, "DELETE", f"/v1/facts/{segment(memory_id)}")


LinkId = Annotated[str, Field(description="The link's id (as `link_memories` returned it).")]


@server.tool(title="Link two memories", annotations=REPLAYABLE_ADD)
async def link_memories(
    ctx: Context,
    memory_id: MemoryId,
    target: Annotated[str, Field(description="The memory linked to (a fact id it may read).")],
    type: Annotated[str, Field(description="The relation, e.g. `related`, `about`.")],
    confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
) -> Result:
    """Link a memory to another (the same link again changes nothing)."""
    body = {"target": target, "type": type, "confidence": confidence}
    return await rest(ctx, "POST", f"/v1/facts/{segment(memory_id)}/links", body=body)


@server.tool(title="Follow a memory's links", annotations=READ)
async def memory_links(
    ctx: Context,
    memory_id: MemoryId,
    hops: Annotated[int, Field(ge=1, le=5, description="How far to follow.")] = 1,
    direction: Literal["out", "in"] = "out",
    order: Literal["nearest", "recency"] = "nearest",
    limit: Annotated[int | None, Field(ge=1, le=200)] = None,
) -> Result:
    """The memories reached along links (only links valid now, only memories it may read)."""
    params = {"hops": hops, "direction": direction, "order": order, "limit": limit}
    return await rest(ctx, "GET", f"/v1/facts/{segment(memory_id)}/links", params=params)


@server.tool(title="Update a link", annotations=CHANGE)
async def update_link(
    ctx: Context,
    memory_id: MemoryId,
    link_id: LinkId,
    changes: Annotated[
        dict[str, Any],
        Field(
            description="Any of confidence, provenance, valid_at, invalid_at (from then on the"
            " link is not followed); null clears one."
        ),
    ],
) -> Result:
    """Change a link's confidence, provenance or validity."""
    path = f"/v1/facts/{segment(memory_id)}/links/{segment(link_id)}"
    return await rest(ctx, "PATCH", path, body=changes, content_type="application/merge-patch+json")


@server.tool(title="Remove a link", annotations=REMOVE)
async def delete_link(ctx: Context, memory_id: MemoryId, link_id: LinkId) -> Result:
    """Remove a link between memories (the memories stay)."""
    path = f"/v1/facts/{segment(memory_id)}/links/{segment(link_id)}"
    return await rest(ctx, "DELETE", path)


@server.tool(title="Import a memory file", annotations=REPLAYABLE_ADD)
async def import_memory_file(
    ctx: Context,
    file: Annotated[
        str,
        Field(
            description="One memory file in the 003 seed's format: `---`, its YAML envelope,"
            " `---`, the content (as `GET /v1/facts/export` writes them)."
        ),
    ],
    scope: Scope_ = None,
) -> Result:
    """Write a memory file as a memory, as this credential (importing it again changes
    nothing). A zip of many, and the export (a zip), are REST's: `/v1/facts/import|export`."""
    return await rest(
        ctx,
        "POST",
        "/v1/facts/import",
        params=scope or {},
        raw=file,
        content_type="text/markdown",
    )


@server.tool(title="Recall conversations", annotations=READ)
async def recall(
    ctx: Context,
    selections: Annotated[
        list[dict[str, Any]],
        Field(
            min_length=1,
            description="Which conversations: each {agent_id, and optionally conversation_id,"
            " before_sequence, exclude_conversation_id, participant_id, user_id, project_id,"
            " segments_prefix}; any of them matches.",
        ),
    ],
    mode: Annotated[
        Literal["list", "keyword", "semantic"],
        Field(description="list (newest first), keyword or semantic."),
    ] = "keyword",
    query: Annotated[str | None, Field(description="The words (keyword, semantic).")] = None,
    roles: Annotated[
        list[Literal["user", "agent"]] | None, Field(description="Whose messages; default user.")
    ] = None,
    top_k: Annotated[int, Field(ge=1, le=100)] = 10,
    abstain: Annotated[
        bool,
        Field(description="Drop hits under the calibrated relevance floors: maybe no hits."),
    ] = False,
    min_relevance: Annotated[
        float | None,
        Field(description="keyword/semantic: drop hits scoring under this (BM25; cosine)."),
    ] = None,
) -> Result:
    """Recall messages of earlier conversations this credential may read, each with its
    neighbours."""
    return await rest(
        ctx,
        "POST",
        "/v1/recall",
        body={
            "selections": selections,
            "mode": mode,
            "query": query,
            "roles": roles,
            "top_k": top_k,
            "abstain": abstain,
            "min_relevance": min_relevance,
        },
    )


@server.tool(title="Append messages", annotations=ADD)
async def append_messages(
    ctx: Context,
    conversation_id: Annotated[str, Field(description="The conversation (the run's thread).")],
    messages: Annotated[
        list[dict[str, str]],
        Field(min_length=1, max_length=100, description='Each {"role": user|agent|tool, "text"}.'),
    ],
    agent_id: Annotated[str | None, Field(description="(app keys) when creating it")] = None,
    project_id: Annotated[str | None, Field(description="(app keys) when creating it")] = None,
    participant_id: Annotated[str | None, Field(description="(app keys) its end user")] = None,
) -> Result:
    """Append messages to a conversation (created on its first write); sequences are assigned
    by the server."""
    return await rest(
        ctx,
        "POST",
        f"/v1/conversations/{segment(conversation_id)}/messages",
        body={
            "messages": messages,
            "agent_id": agent_id,
            "project_id": project_id,
            "participant_id": participant_id,
        },
    )


@server.tool(title="Extract memories from a conversation", annotations=REPLAYABLE_ADD)
async def extract_memories(
    ctx: Context,
    conversation_id: Annotated[str, Field(description="The conversation (the run's thread).")],
) -> Result:
    """Have kindmem's chat model turn the conversation's messages since its last extraction
    into memories, in the background: new ones under remember's review rules, and a change to
    an existing one only as a proposal a reviewer decides. Asking again while one is queued
    answers that one. `extractions` says how it went."""
    return await rest(ctx, "POST", f"/v1/conversations/{segment(conversation_id)}/extract", body={})


@server.tool(title="A conversation's extractions", annotations=READ)
async def extractions(
    ctx: Context,
    conversation_id: Annotated[str, Field(description="The conversation (the run's thread).")],
) -> Result:
    """The conversation's watermark (the last message extracted) and its newest extractions,
    each with its decisions and the messages they cite."""
    return await rest(ctx, "GET", f"/v1/conversations/{segment(conversation_id)}/extract")


@server.tool(title="List pending approvals", annotations=READ)
async def list_pending_approvals(
    ctx: Context,
    reason: Annotated[
        Literal[
            "wide-scope",
            "instruction-like",
            "hidden-characters",
            "verified-slot",
            "contradiction",
            "extracted",
        ]
        | None,
        Field(description="Only approvals with this reason."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Field(description="`next_cursor` of the previous page.")] = None,
) -> Result:
    """Memories waiting for review, oldest first (a reviewer's or tenant admin's key)."""
    return await rest(
        ctx,
        "GET",
        "/v1/approvals",
        params={"status": "pending", "reason": reason, "limit": limit, "cursor": cursor},
    )


@server.tool(title="Decide an approval", annotations=CHANGE)
async def decide_approval(
    ctx: Context,
    approval_id: Annotated[str, Field(description="The approval's id.")],
    decision: Annotated[
        Literal["approve", "reject", "verify"],
        Field(
            description="approve (readable), reject (never readable), verify (approve, verified)."
        ),
    ],
    note: Annotated[str | None, Field(max_length=2000, description="Why.")] = None,
) -> Result:
    """Decide a pending memory (a reviewer's or tenant admin's key); a decision is taken once."""
    return await rest(
        ctx,
        "POST",
        f"/v1/approvals/{segment(approval_id)}/{decision}",
        body={"note": note},
    )
