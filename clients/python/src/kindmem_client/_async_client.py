"""`AsyncClient`: every /v1 route of kindmem, on httpx.

The sync `Client` (`_sync_client.py`) is written from this module by
`clients/python/scripts/unasync.py`, and a test fails when the two differ, so both always have
the same methods. Each method is one route; `OPERATIONS` (kindmem_client/operations.py) names
them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, cast
from uuid import UUID

import anyio
import httpx

from kindmem_client._base import (
    DEFAULT_TIMEOUT,
    USER_AGENT,
    RetryPolicy,
    auth_headers,
    body,
    checked,
    query_params,
    resolve_settings,
    segment,
)
from kindmem_client.types import (
    AccessRequest,
    Append,
    Approval,
    ApprovalList,
    AuditEvent,
    AuditPage,
    Erasure,
    Fact,
    FactList,
    FactSearch,
    FactWrite,
    LinkCreate,
    LinkTraversal,
    LogEntry,
    LogPage,
    LogVerify,
    MessageDelete,
    MessageInput,
    MessageList,
    MessagesClear,
    Recall,
    Remember,
    RetentionInput,
    RevisionList,
    RunMint,
    ScopeInput,
    SearchScopeInput,
    SelectionInput,
    SubjectInput,
    WhoAmI,
)

Id = str | UUID
When = datetime | str


class AsyncClient:
    """kindmem's REST API (`/v1`), asynchronously.

    `token` is an API key (`kmk_...`) or a run token (`kmr_...`); `base_url` the server. Either
    falls back to `KINDMEM_TOKEN` / `KINDMEM_URL`. Errors raise `kindmem_client.errors`
    classes; a 429 is retried after its `Retry-After`, within `retry` (a `RetryPolicy`).
    Pass `transport` to talk to something other than the network (httpx's WSGI or ASGI
    transport in tests), or `http_client` to bring your own `httpx.AsyncClient`.
    """

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.token, self.base_url = resolve_settings(token, base_url)
        self.retry = retry or RetryPolicy()
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )
        self._sleep = sleep or anyio.sleep

    def with_token(self, token: str) -> AsyncClient:
        """A client acting with another credential (say a run token just minted), sharing this
        one's connections; close this one, not it."""
        other = AsyncClient(token, base_url=self.base_url, retry=self.retry, http_client=self._http)
        other._sleep = self._sleep
        return other

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """Send one request with this client's credential; retry a 429 as `retry` allows; raise
        the typed exception for an error answer."""
        attempt = 0
        while True:
            response = await self._http.request(
                method,
                path,
                params=params,
                json=json,
                headers=auth_headers(self.token),
            )
            wait = self.retry.wait_for(response, attempt)
            if wait is None:
                return checked(response)
            await response.aclose()
            await self._sleep(wait)
            attempt += 1

    async def _json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> Any:
        response = await self.request(method, path, params=params, json=json)
        return response.json()

    # ---- who am I, runs ---------------------------------------------------------------------

    async def me(self) -> WhoAmI:
        """The caller's principal and the readers its credential grants."""
        return cast(WhoAmI, await self._json("GET", "/v1/me"))

    async def mint_run(
        self,
        *,
        agent_id: str,
        project_id: Id,
        participant_id: str | None = None,
        user_id: Id | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
    ) -> RunMint:
        """Mint a run (an app or user key): its `run` and its short-lived `token`."""
        payload = body(
            agent_id=agent_id,
            project_id=project_id,
            participant_id=participant_id,
            user_id=user_id,
            thread_id=thread_id,
            session_id=session_id,
        )
        return cast(RunMint, await self._json("POST", "/v1/runs", json=payload))

    # ---- facts ------------------------------------------------------------------------------

    async def create_fact(
        self,
        *,
        type: str,
        content: Any,
        scope: ScopeInput | None = None,
        key: str | None = None,
        tags: Sequence[str] | None = None,
        subjects: Sequence[SubjectInput] | None = None,
        valid_from: When | None = None,
        valid_until: When | None = None,
        observed_at: When | None = None,
        retention: RetentionInput | None = None,
        source: Any = None,
        caused_by_log_id: Sequence[str] | None = None,
    ) -> FactWrite:
        """Write a fact: `created`, or `unchanged` / `superseded` for content already there."""
        payload = body(
            type=type,
            content=content,
            scope=scope,
            key=key,
            tags=tags,
            subjects=subjects,
            valid_from=valid_from,
            valid_until=valid_until,
            observed_at=observed_at,
            retention=retention,
            source=source,
            caused_by_log_id=caused_by_log_id,
        )
        return cast(FactWrite, await self._json("POST", "/v1/facts", json=payload))

    async def list_facts(
        self,
        *,
        type: str | None = None,
        key: str | None = None,
        org_id: Id | None = None,
        project_id: Id | None = None,
        user_id: Id | None = None,
        participant_id: str | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
        tag: str | None = None,
        valid_at: When | None = None,
        as_of: When | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> FactList:
        """One page of the facts the credential may read, newest first; `next_cursor` pages."""
        params = query_params(
            type=type,
            key=key,
            org_id=org_id,
            project_id=project_id,
            user_id=user_id,
            participant_id=participant_id,
            thread_id=thread_id,
            session_id=session_id,
            tag=tag,
            valid_at=valid_at,
            as_of=as_of,
            limit=limit,
            cursor=cursor,
        )
        return cast(FactList, await self._json("GET", "/v1/facts", params=params))

    async def iter_facts(
        self,
        *,
        type: str | None = None,
        key: str | None = None,
        org_id: Id | None = None,
        project_id: Id | None = None,
        user_id: Id | None = None,
        participant_id: str | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
        tag: str | None = None,
        valid_at: When | None = None,
        as_of: When | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Fact]:
        """Every fact `list_facts` would page through, following `next_cursor`."""
        cursor: str | None = None
        while True:
            page = await self.list_facts(
                type=type,
                key=key,
                org_id=org_id,
                project_id=project_id,
                user_id=user_id,
                participant_id=participant_id,
                thread_id=thread_id,
                session_id=session_id,
                tag=tag,
                valid_at=valid_at,
                as_of=as_of,
                limit=page_size,
                cursor=cursor,
            )
            for fact in page["facts"]:
                yield fact
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def search_facts(
        self,
        query: str,
        *,
        mode: Literal["keyword", "semantic", "hybrid"] | None = None,
        type: str | None = None,
        scope: SearchScopeInput | None = None,
        tags: Sequence[str] | None = None,
        valid_at: When | None = None,
        top_k: int | None = None,
    ) -> FactSearch:
        """Keyword, semantic or hybrid (the default) search of the facts it may read."""
        payload = body(
            query=query,
            mode=mode,
            type=type,
            scope=scope,
            tags=tags,
            valid_at=valid_at,
            top_k=top_k,
        )
        return cast(FactSearch, await self._json("POST", "/v1/facts/search", json=payload))

    async def get_fact(self, fact_id: Id) -> Fact:
        """One fact's current revision (`FactNotFound` if it may not read it)."""
        return cast(Fact, await self._json("GET", f"/v1/facts/{segment(fact_id)}"))

    async def delete_fact(self, fact_id: Id) -> FactWrite:
        """Invalidate a fact (`deleted`); `RetentionViolation` where retention forbids it."""
        return cast(FactWrite, await self._json("DELETE", f"/v1/facts/{segment(fact_id)}"))

    async def fact_revisions(self, fact_id: Id) -> RevisionList:
        """A fact's history, newest first."""
        path = f"/v1/facts/{segment(fact_id)}/revisions"
        return cast(RevisionList, await self._json("GET", path))

    async def supersede_fact(
        self,
        fact_id: Id,
        *,
        content: Any,
        expected_version: int | None = None,
        subjects: Sequence[SubjectInput] | None = None,
        valid_from: When | None = None,
        valid_until: When | None = None,
        observed_at: When | None = None,
        retention: RetentionInput | None = None,
        source: Any = None,
        caused_by_log_id: Sequence[str] | None = None,
    ) -> FactWrite:
        """A fact's next revision; `Conflict` if `expected_version` is no longer current."""
        payload = body(
            content=content,
            expected_version=expected_version,
            subjects=subjects,
            valid_from=valid_from,
            valid_until=valid_until,
            observed_at=observed_at,
            retention=retention,
            source=source,
            caused_by_log_id=caused_by_log_id,
        )
        path = f"/v1/facts/{segment(fact_id)}/supersede"
        return cast(FactWrite, await self._json("POST", path, json=payload))

    async def verify_fact(self, fact_id: Id, *, expected_version: int | None = None) -> FactWrite:
        """A new revision with `trust: verified` (a tenant admin or Kindgi user key)."""
        path = f"/v1/facts/{segment(fact_id)}/verify"
        payload = body(expected_version=expected_version)
        return cast(FactWrite, await self._json("POST", path, json=payload))

    async def link_facts(
        self,
        fact_id: Id,
        *,
        target: Id,
        type: str,
        confidence: float | None = None,
        provenance: Any = None,
        valid_at: When | None = None,
        invalid_at: When | None = None,
    ) -> LinkCreate:
        """Link a fact to another readable fact (`created` false if the link was there)."""
        payload = body(
            target=target,
            type=type,
            confidence=confidence,
            provenance=provenance,
            valid_at=valid_at,
            invalid_at=invalid_at,
        )
        path = f"/v1/facts/{segment(fact_id)}/links"
        return cast(LinkCreate, await self._json("POST", path, json=payload))

    async def fact_links(
        self,
        fact_id: Id,
        *,
        direction: Literal["out", "in"] | None = None,
        hops: int | None = None,
        type: str | None = None,
    ) -> LinkTraversal:
        """The facts reached along links from a fact, breadth-first, up to `hops` away."""
        params = query_params(direction=direction, hops=hops, type=type)
        path = f"/v1/facts/{segment(fact_id)}/links"
        return cast(LinkTraversal, await self._json("GET", path, params=params))

    # ---- remember and review ----------------------------------------------------------------

    async def remember(
        self,
        *,
        type: str,
        text: str,
        tool_call_id: str,
        key: str | None = None,
        valid_until: When | None = None,
        step_id: str | None = None,
    ) -> Remember:
        """The agent's remember tool (a run token): `created`, `superseded` or `replayed`;
        `approval_id` and `review` are set when the memory waits for review."""
        payload = body(
            type=type,
            text=text,
            tool_call_id=tool_call_id,
            key=key,
            valid_until=valid_until,
            step_id=step_id,
        )
        return cast(Remember, await self._json("POST", "/v1/remember", json=payload))

    async def list_approvals(
        self,
        *,
        status: Literal["pending", "approved", "rejected", "verified", "superseded"] | None = None,
        reason: Literal["wide-scope", "instruction-like", "hidden-characters"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ApprovalList:
        """One page of approvals (pending by default), oldest first."""
        params = query_params(status=status, reason=reason, limit=limit, cursor=cursor)
        return cast(ApprovalList, await self._json("GET", "/v1/approvals", params=params))

    async def iter_approvals(
        self,
        *,
        status: Literal["pending", "approved", "rejected", "verified", "superseded"] | None = None,
        reason: Literal["wide-scope", "instruction-like", "hidden-characters"] | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Approval]:
        """Every approval `list_approvals` would page through."""
        cursor: str | None = None
        while True:
            page = await self.list_approvals(
                status=status, reason=reason, limit=page_size, cursor=cursor
            )
            for approval in page["approvals"]:
                yield approval
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def approve(
        self, approval_id: Id, *, note: str | None = None, verify: bool | None = None
    ) -> Approval:
        """Approve a pending memory: readable as written; `verify=True` also verifies it."""
        path = f"/v1/approvals/{segment(approval_id)}/approve"
        payload = body(note=note, verify=verify)
        return cast(Approval, await self._json("POST", path, json=payload))

    async def reject(self, approval_id: Id, *, note: str | None = None) -> Approval:
        """Reject a pending memory: it is never readable."""
        path = f"/v1/approvals/{segment(approval_id)}/reject"
        return cast(Approval, await self._json("POST", path, json=body(note=note)))

    async def approve_and_verify(self, approval_id: Id, *, note: str | None = None) -> Approval:
        """Approve a pending memory and write it `trust: verified`."""
        path = f"/v1/approvals/{segment(approval_id)}/verify"
        return cast(Approval, await self._json("POST", path, json=body(note=note)))

    # ---- conversations and recall -----------------------------------------------------------

    async def append_messages(
        self,
        conversation_id: str,
        messages: Sequence[MessageInput],
        *,
        agent_id: str | None = None,
        project_id: Id | None = None,
        participant_id: str | None = None,
        user_id: Id | None = None,
        segments: Sequence[str] | None = None,
    ) -> Append:
        """Append messages (`{"role", "text"}`, at most 100) to a conversation; an app key
        names `agent_id` and `project_id` (and the person) when it creates the conversation."""
        payload = body(
            messages=messages,
            agent_id=agent_id,
            project_id=project_id,
            participant_id=participant_id,
            user_id=user_id,
            segments=segments,
        )
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        return cast(Append, await self._json("POST", path, json=payload))

    async def list_messages(
        self,
        conversation_id: str,
        *,
        before_sequence: int | None = None,
        limit: int | None = None,
    ) -> MessageList:
        """The newest `limit` messages of a conversation (before `before_sequence`), oldest
        first, with their `data`; `next_before_sequence` pages to older ones."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        params = query_params(before_sequence=before_sequence, limit=limit)
        return cast(MessageList, await self._json("GET", path, params=params))

    async def delete_message(self, conversation_id: str, sequence: int) -> MessageDelete:
        """Delete one message of a conversation; the answer carries it."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages/{int(sequence)}"
        return cast(MessageDelete, await self._json("DELETE", path))

    async def clear_messages(self, conversation_id: str) -> MessagesClear:
        """Delete every message of a conversation (it stays, its sequences go on)."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        return cast(MessagesClear, await self._json("DELETE", path))

    async def recall(
        self,
        *,
        selections: Sequence[SelectionInput],
        mode: Literal["list", "keyword", "semantic"],
        query: str | None = None,
        roles: Sequence[Literal["user", "agent"]] | None = None,
        top_k: int | None = None,
    ) -> Recall:
        """Recall messages of earlier conversations the credential may read."""
        payload = body(selections=selections, mode=mode, query=query, roles=roles, top_k=top_k)
        return cast(Recall, await self._json("POST", "/v1/recall", json=payload))

    # ---- run log ----------------------------------------------------------------------------

    async def append_log(
        self,
        run_id: Id,
        *,
        kind: Literal[
            "turn",
            "tool-call",
            "tool-result",
            "memory-read",
            "memory-write",
            "decision",
            "error",
            "note",
        ],
        payload: Mapping[str, Any],
        caused_by_log_id: Id | None = None,
    ) -> LogEntry:
        """Append an entry to a run's hash-chained log."""
        path = f"/v1/runs/{segment(run_id)}/log"
        data = body(kind=kind, payload=payload, caused_by_log_id=caused_by_log_id)
        return cast(LogEntry, await self._json("POST", path, json=data))

    async def read_log(
        self, run_id: Id, *, after_sequence: int | None = None, limit: int | None = None
    ) -> LogPage:
        """One page of a run's log, oldest first; `next_after_sequence` pages."""
        path = f"/v1/runs/{segment(run_id)}/log"
        params = query_params(after_sequence=after_sequence, limit=limit)
        return cast(LogPage, await self._json("GET", path, params=params))

    async def iter_log(
        self, run_id: Id, *, after_sequence: int = 0, page_size: int | None = None
    ) -> AsyncIterator[LogEntry]:
        """Every entry of a run's log after `after_sequence`."""
        after: int | None = after_sequence
        while after is not None:
            page = await self.read_log(run_id, after_sequence=after, limit=page_size)
            for entry in page["entries"]:
                yield entry
            after = page["next_after_sequence"]

    async def verify_log(self, run_id: Id) -> LogVerify:
        """Recompute a run's hash chain: `ok`, its `head`, the first bad sequence."""
        path = f"/v1/runs/{segment(run_id)}/log/verify"
        return cast(LogVerify, await self._json("GET", path))

    # ---- privacy ----------------------------------------------------------------------------

    async def start_erasure(
        self,
        *,
        target_kind: Literal["participant", "user", "external", "conversation"],
        target_id: str,
        reason: str,
    ) -> Erasure:
        """Erase everything about a person (or one conversation), on a worker."""
        payload = body(target_kind=target_kind, target_id=target_id, reason=reason)
        return cast(Erasure, await self._json("POST", "/v1/erasures", json=payload))

    async def get_erasure(self, erasure_id: Id) -> Erasure:
        """An erasure's status, progress and, once done, its receipt."""
        return cast(Erasure, await self._json("GET", f"/v1/erasures/{segment(erasure_id)}"))

    async def request_access_export(
        self,
        *,
        subject_kind: Literal["participant", "user", "external"],
        subject_id: str,
    ) -> AccessRequest:
        """Ask for an export of everything kindmem holds about a person (a worker builds it)."""
        payload = body(subject_kind=subject_kind, subject_id=subject_id)
        path = "/v1/subject-access-requests"
        return cast(AccessRequest, await self._json("POST", path, json=payload))

    async def get_access_request(self, request_id: Id) -> AccessRequest:
        """A subject access request's status and, once built, its download links."""
        path = f"/v1/subject-access-requests/{segment(request_id)}"
        return cast(AccessRequest, await self._json("GET", path))

    async def download_access_export(
        self, request_id: Id, *, token: str, export: Literal["json", "zip"] = "json"
    ) -> bytes:
        """The export's bytes (JSON or a zip of Markdown memory files); `token` is the one in
        the request's download links. `LinkExpired` once it expired."""
        path = f"/v1/subject-access-requests/{segment(request_id)}/download"
        response = await self.request("GET", path, params=query_params(export=export, token=token))
        return response.content

    # ---- audit ------------------------------------------------------------------------------

    async def list_audit(
        self,
        *,
        since_seq: int | None = None,
        limit: int | None = None,
        since: When | None = None,
        until: When | None = None,
        phase: Literal["read", "write", "delete", "retrieve"] | None = None,
        outcome: Literal["success", "failure"] | None = None,
        kind: str | None = None,
        subject: str | None = None,
        principal: str | None = None,
        fact_id: Id | None = None,
        project_id: Id | None = None,
    ) -> AuditPage:
        """One page of the tenant's audit events after `since_seq`, oldest first."""
        params = query_params(
            since_seq=since_seq,
            limit=limit,
            since=since,
            until=until,
            phase=phase,
            outcome=outcome,
            kind=kind,
            subject=subject,
            principal=principal,
            fact_id=fact_id,
            project_id=project_id,
        )
        return cast(AuditPage, await self._json("GET", "/v1/audit", params=params))

    async def iter_audit(
        self,
        *,
        since_seq: int = 0,
        page_size: int = 100,
        since: When | None = None,
        until: When | None = None,
        phase: Literal["read", "write", "delete", "retrieve"] | None = None,
        outcome: Literal["success", "failure"] | None = None,
        kind: str | None = None,
        subject: str | None = None,
        principal: str | None = None,
        fact_id: Id | None = None,
        project_id: Id | None = None,
    ) -> AsyncIterator[AuditEvent]:
        """Every audit event after `since_seq` up to now; a short page is the last."""
        while True:
            page = await self.list_audit(
                since_seq=since_seq,
                limit=page_size,
                since=since,
                until=until,
                phase=phase,
                outcome=outcome,
                kind=kind,
                subject=subject,
                principal=principal,
                fact_id=fact_id,
                project_id=project_id,
            )
            for event in page["events"]:
                yield event
            if len(page["events"]) < page_size:
                return
            since_seq = page["next_since_seq"]
