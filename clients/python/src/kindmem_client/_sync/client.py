"""`Client`: every /v1 route of kindmem, on httpx.

Written from `kindmem_client/_async/client.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

from types import TracebackType

from kindmem_client._sync.approvals import Approvals
from kindmem_client._sync.audit import Audit
from kindmem_client._sync.conversations import Conversations
from kindmem_client._sync.facts import Facts
from kindmem_client._sync.privacy import Privacy
from kindmem_client._sync.runs import Runs
from kindmem_client._sync.webhooks import Webhooks


class Client(
    Runs,
    Facts,
    Approvals,
    Conversations,
    Privacy,
    Audit,
    Webhooks,
):
    """kindmem's REST API (`/v1`).

    `token` is an API key (`kmk_...`) or a run token (`kmr_...`); `base_url` the server. Either
    falls back to `KINDMEM_TOKEN` / `KINDMEM_URL`. Errors raise `kindmem_client.errors`
    classes; a 429 is retried after its `Retry-After`, within `retry` (a `RetryPolicy`).
    Pass `transport` to talk to something other than the network (httpx's WSGI or ASGI
    transport in tests), or `http_client` to bring your own `httpx.Client`.
    """

    def with_token(self, token: str) -> Client:
        """A client acting with another credential (say a run token just minted), sharing this
        one's connections; close this one, not it."""
        other = Client(token, base_url=self.base_url, retry=self.retry, http_client=self._http)
        other._sleep = self._sleep
        return other

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
