"""The agent's `remember` tool and the review of what it holds back.

Written from `kindmem_client/_async/approvals.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, cast

from kindmem_client._base import Id, When, body, query_params, segment
from kindmem_client._sync.core import Core
from kindmem_client.types import Approval, ApprovalList, Remember


class Approvals(Core):
    """`/v1/remember` and `/v1/approvals`."""

    def remember(
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
        return cast(Remember, self._json("POST", "/v1/remember", json=payload))

    def list_approvals(
        self,
        *,
        status: Literal["pending", "approved", "rejected", "verified", "superseded"] | None = None,
        reason: Literal["wide-scope", "instruction-like", "hidden-characters"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ApprovalList:
        """One page of approvals (pending by default), oldest first."""
        params = query_params(status=status, reason=reason, limit=limit, cursor=cursor)
        return cast(ApprovalList, self._json("GET", "/v1/approvals", params=params))

    def iter_approvals(
        self,
        *,
        status: Literal["pending", "approved", "rejected", "verified", "superseded"] | None = None,
        reason: Literal["wide-scope", "instruction-like", "hidden-characters"] | None = None,
        page_size: int | None = None,
    ) -> Iterator[Approval]:
        """Every approval `list_approvals` would page through."""
        cursor: str | None = None
        while True:
            page = self.list_approvals(status=status, reason=reason, limit=page_size, cursor=cursor)
            yield from page["approvals"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def approve(
        self, approval_id: Id, *, note: str | None = None, verify: bool | None = None
    ) -> Approval:
        """Approve a pending memory: readable as written; `verify=True` also verifies it."""
        path = f"/v1/approvals/{segment(approval_id)}/approve"
        payload = body(note=note, verify=verify)
        return cast(Approval, self._json("POST", path, json=payload))

    def reject(self, approval_id: Id, *, note: str | None = None) -> Approval:
        """Reject a pending memory: it is never readable."""
        path = f"/v1/approvals/{segment(approval_id)}/reject"
        return cast(Approval, self._json("POST", path, json=body(note=note)))

    def approve_and_verify(self, approval_id: Id, *, note: str | None = None) -> Approval:
        """Approve a pending memory and write it `trust: verified`."""
        path = f"/v1/approvals/{segment(approval_id)}/verify"
        return cast(Approval, self._json("POST", path, json=body(note=note)))
