"""What every route of `Client` stands on: its credential, its connections and one
request, retried after a 429 as its `RetryPolicy` allows.

Written from `kindmem_client/_async/core.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from json import dumps as json_dumps
from typing import Any

import httpx

from kindmem_client._base import (
    DEFAULT_TIMEOUT,
    USER_AGENT,
    RetryPolicy,
    auth_headers,
    checked,
    resolve_settings,
)


class Core:
    """The transport under `Client`; each resource group of routes is a subclass."""

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.token, self.base_url = resolve_settings(token, base_url)
        self.retry = retry or RetryPolicy()
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )
        self._sleep = sleep or time.sleep

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def request(
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
            response = self._http.request(method, path, params=params, headers=headers, **sent)
            wait = self.retry.wait_for(response, attempt)
            if wait is None:
                return checked(response)
            response.close()
            self._sleep(wait)
            attempt += 1

    def _json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        media_type: str | None = None,
    ) -> Any:
        response = self.request(method, path, params=params, json=json, media_type=media_type)
        return response.json()
