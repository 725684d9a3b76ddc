"""The agent's `remember` tool and the review of what it holds back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal, cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, When, body, query_params, segment
from kindmem_client.types import Approval, ApprovalList, Remember


class AsyncApprovals(AsyncCore):
    """`/v1/remember` and `/v1/approvals`."""

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
