"""Who the credential is, runs and their hash-chained logs.

Written from `kindmem_client/_async/runs.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast

from kindmem_client._base import Id, body, query_params, segment
from kindmem_client._sync.core import Core
from kindmem_client.types import Capabilities, LogEntry, LogPage, LogVerify, RunMint, WhoAmI


class Runs(Core):
    """`/v1/me`, `/v1/capabilities`, `/v1/runs` and a run's log."""

    def me(self) -> WhoAmI:
        """The caller's principal and the readers its credential grants."""
        return cast(WhoAmI, self._json("GET", "/v1/me"))

    def capabilities(self) -> Capabilities:
        """What this deployment can do for this credential, probed before calling: the
        retrieval modes that answer now (and the error the others would), the rerankers, the
        embedder, and which operations the credential may call."""
        return cast(Capabilities, self._json("GET", "/v1/capabilities"))

    def mint_run(
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
        return cast(RunMint, self._json("POST", "/v1/runs", json=payload))

    def append_log(
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
        return cast(LogEntry, self._json("POST", path, json=data))

    def read_log(
        self, run_id: Id, *, after_sequence: int | None = None, limit: int | None = None
    ) -> LogPage:
        """One page of a run's log, oldest first; `next_after_sequence` pages."""
        path = f"/v1/runs/{segment(run_id)}/log"
        params = query_params(after_sequence=after_sequence, limit=limit)
        return cast(LogPage, self._json("GET", path, params=params))

    def iter_log(
        self, run_id: Id, *, after_sequence: int = 0, page_size: int | None = None
    ) -> Iterator[LogEntry]:
        """Every entry of a run's log after `after_sequence`."""
        after: int | None = after_sequence
        while after is not None:
            page = self.read_log(run_id, after_sequence=after, limit=page_size)
            yield from page["entries"]
            after = page["next_after_sequence"]

    def verify_log(self, run_id: Id) -> LogVerify:
        """Recompute a run's hash chain: `ok`, its `head`, the first bad sequence."""
        path = f"/v1/runs/{segment(run_id)}/log/verify"
        return cast(LogVerify, self._json("GET", path))
