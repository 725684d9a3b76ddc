"""`AsyncClient`: every /v1 route of kindmem, on httpx.

One module per group of routes (`facts.py`, `approvals.py`, ...), each a class on `AsyncCore`
(`core.py`), and `AsyncClient` all of them. The sync `Client` (`kindmem_client/_sync/`) is
written from this package by `clients/python/scripts/unasync.py`, and a test fails when the two
differ, so both always have the same methods. Each method is one route; `OPERATIONS`
(kindmem_client/operations.py) names them.
"""

from __future__ import annotations

from types import TracebackType

from kindmem_client._async.approvals import AsyncApprovals
from kindmem_client._async.audit import AsyncAudit
from kindmem_client._async.conversations import AsyncConversations
from kindmem_client._async.facts import AsyncFacts
from kindmem_client._async.privacy import AsyncPrivacy
from kindmem_client._async.runs import AsyncRuns
from kindmem_client._async.webhooks import AsyncWebhooks


class AsyncClient(
    AsyncRuns,
    AsyncFacts,
    AsyncApprovals,
    AsyncConversations,
    AsyncPrivacy,
    AsyncAudit,
    AsyncWebhooks,
):
    """kindmem's REST API (`/v1`), asynchronously.

    `token` is an API key (`kmk_...`) or a run token (`kmr_...`); `base_url` the server. Either
    falls back to `KINDMEM_TOKEN` / `KINDMEM_URL`. Errors raise `kindmem_client.errors`
    classes; a 429 is retried after its `Retry-After`, within `retry` (a `RetryPolicy`).
    Pass `transport` to talk to something other than the network (httpx's WSGI or ASGI
    transport in tests), or `http_client` to bring your own `httpx.AsyncClient`.
    """

    def with_token(self, token: str) -> AsyncClient:
        """A client acting with another credential (say a run token just minted), sharing this
        one's connections; close this one, not it."""
        other = AsyncClient(token, base_url=self.base_url, retry=self.retry, http_client=self._http)
        other._sleep = self._sleep
        return other

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
