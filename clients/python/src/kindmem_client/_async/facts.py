"""Facts: written, read, paged, searched, revised, verified and linked."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, When, body, jsonable, query_params, segment
from kindmem_client.types import (
    Fact,
    FactImport,
    FactList,
    FactSearch,
    FactWrite,
    LinkChange,
    LinkCreate,
    LinkTraversal,
    RetentionInput,
    RevisionList,
    ScopeInput,
    SearchScopeInput,
    SubjectInput,
)


class AsyncFacts(AsyncCore):
    """`/v1/facts` and its sub-resources."""

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

    async def export_facts(
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
    ) -> bytes:
        """Every fact `list_facts` would list with these filters, as the bytes of a zip of
        memory files (`facts/<id>.md`, the 003 seed's format); `ValidationError` when more
        match than one import takes (KINDMEM_MEMORY_FILES_MAX): narrow it."""
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
        )
        response = await self.request("GET", "/v1/facts/export", params=params)
        return response.content

    async def import_facts(
        self,
        files: bytes | str,
        *,
        media_type: Literal["application/zip", "text/markdown"] | None = None,
        org_id: Id | None = None,
        project_id: Id | None = None,
        user_id: Id | None = None,
        participant_id: str | None = None,
        thread_id: str | None = None,
        session_id: str | None = None,
    ) -> FactImport:
        """Write memory files as facts, as this credential: a zip of `facts/<id>.md` (bytes), or
        one memory file (a str). Each file's outcome (`created`, `unchanged`, `superseded`) and
        its fact here; the scope keys given replace the files' own. All or nothing:
        `ValidationError` names the file and the field."""
        if media_type is None:
            media_type = "text/markdown" if isinstance(files, str) else "application/zip"
        params = query_params(
            org_id=org_id,
            project_id=project_id,
            user_id=user_id,
            participant_id=participant_id,
            thread_id=thread_id,
            session_id=session_id,
        )
        response = await self.request(
            "POST",
            "/v1/facts/import",
            params=params,
            content=files.encode() if isinstance(files, str) else files,
            media_type=media_type,
        )
        return cast(FactImport, response.json())

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

    async def patch_fact(
        self, fact_id: Id, patch: Mapping[str, Any], *, expected_version: int | None = None
    ) -> FactWrite:
        """A JSON merge patch (RFC 7386) of a fact's `content`, `valid_from` and `valid_until`,
        written as its next revision: `None` deletes a key, lists replace, dicts merge.
        `ValidationError` names a field the fact's type does not let change; `Conflict` if
        `expected_version` is no longer current."""
        return cast(
            FactWrite,
            await self._json(
                "PATCH",
                f"/v1/facts/{segment(fact_id)}",
                params=query_params(expected_version=expected_version),
                json=dict(patch),
                media_type="application/merge-patch+json",
            ),
        )

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
        at: When | None = None,
        order: Literal["nearest", "recency"] | None = None,
        limit: int | None = None,
        fact_type: str | None = None,
        tag: str | None = None,
        scope: Mapping[str, Any] | None = None,
    ) -> LinkTraversal:
        """The facts reached along links from a fact, breadth-first, up to `hops` away, along
        the links valid `at` (now); filtered by the reached facts' type, tag and scope keys,
        `nearest` first or by `recency`, at most `limit`."""
        params = query_params(
            direction=direction,
            hops=hops,
            type=type,
            at=at,
            order=order,
            limit=limit,
            fact_type=fact_type,
            tag=tag,
            **dict(scope or {}),
        )
        path = f"/v1/facts/{segment(fact_id)}/links"
        return cast(LinkTraversal, await self._json("GET", path, params=params))

    async def update_link(
        self,
        fact_id: Id,
        link_id: Id,
        *,
        changes: Mapping[str, Any],
    ) -> LinkChange:
        """Change a link's `confidence`, `provenance`, `valid_at` or `invalid_at` (from then on
        it is not traversed); `None` clears one, what `changes` leaves out is kept."""
        path = f"/v1/facts/{segment(fact_id)}/links/{segment(link_id)}"
        return cast(LinkChange, await self._json("PATCH", path, json=jsonable(dict(changes))))

    async def delete_link(self, fact_id: Id, link_id: Id) -> LinkChange:
        """Remove a link out of a fact (the facts stay); answers the link as it was."""
        path = f"/v1/facts/{segment(fact_id)}/links/{segment(link_id)}"
        return cast(LinkChange, await self._json("DELETE", path))
