"""The tenant's audit events, paged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal, cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, When, query_params
from kindmem_client.types import AuditEvent, AuditPage


class AsyncAudit(AsyncCore):
    """`/v1/audit`."""

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
        type: str | None = None,
        org_id: Id | None = None,
        user_id: Id | None = None,
        participant_id: str | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
    ) -> AuditPage:
        """One page of the tenant's audit events, oldest first: the first `limit` after
        `since_seq` (0: from the first), or without it the most recent `limit`. `type` and the
        scope keys match a fact the event touched, all of them the same fact's."""
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
            type=type,
            org_id=org_id,
            user_id=user_id,
            participant_id=participant_id,
            thread_id=thread_id,
            session_id=session_id,
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
        type: str | None = None,
        org_id: Id | None = None,
        user_id: Id | None = None,
        participant_id: str | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
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
                type=type,
                org_id=org_id,
                user_id=user_id,
                participant_id=participant_id,
                thread_id=thread_id,
                session_id=session_id,
            )
            for event in page["events"]:
                yield event
            if len(page["events"]) < page_size:
                return
            since_seq = page["next_since_seq"]
