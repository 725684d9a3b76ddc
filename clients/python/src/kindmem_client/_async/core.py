"""What every route of `AsyncClient` stands on: its credential, its connections and one
request, retried after a 429 as its `RetryPolicy` allows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from json import dumps as json_dumps
from typing import Any

import anyio
import httpx

from kindmem_client._base import (
    DEFAULT_TIMEOUT,
    USER_AGENT,
    RetryPolicy,
    auth_headers,
    checked,
    resolve_settings,
)


class AsyncCore:
    """The transport under `AsyncClient`; each resource group of routes is a subclass."""

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

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        media_type: str | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """Send one request with this client's credential (its JSON body as `media_type` when
        given, e.g. a merge patch; or `content`, bytes sent as they are, as `media_type`); retry
        a 429 as `retry` allows; raise the typed exception for an error answer."""
        headers = auth_headers(self.token)
        sent: dict[str, Any] = {"json": json}
        if content is not None:
            sent = {"content": content}
            headers = {**headers, "Content-Type": media_type or "application/octet-stream"}
        elif media_type is not None:
            sent = {"content": json_dumps(json).encode()}
            headers = {**headers, "Content-Type": media_type}
        attempt = 0
        while True:
            response = await self._http.request(
                method, path, params=params, headers=headers, **sent
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
        media_type: str | None = None,
    ) -> Any:
        response = await self.request(method, path, params=params, json=json, media_type=media_type)
        return response.json()
