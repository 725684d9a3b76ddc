"""A person's erasure and subject access export."""

from __future__ import annotations

from typing import Literal, cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, body, query_params, segment
from kindmem_client.types import AccessRequest, Erasure


class AsyncPrivacy(AsyncCore):
    """`/v1/erasures` and `/v1/subject-access-requests`."""

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
