"""Who the credential is, runs and their hash-chained logs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, body, query_params, segment
from kindmem_client.types import Capabilities, LogEntry, LogPage, LogVerify, RunMint, WhoAmI


class AsyncRuns(AsyncCore):
    """`/v1/me`, `/v1/capabilities`, `/v1/runs` and a run's log."""

    async def me(self) -> WhoAmI:
        """The caller's principal and the readers its credential grants."""
        return cast(WhoAmI, await self._json("GET", "/v1/me"))

    async def capabilities(self) -> Capabilities:
        """What this deployment can do for this credential, probed before calling: the
        retrieval modes that answer now (and the error the others would), the rerankers, the
        embedder, and which operations the credential may call."""
        return cast(Capabilities, await self._json("GET", "/v1/capabilities"))

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
