"""The tenant's webhook endpoints (tenant admins)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from kindmem_client._async.core import AsyncCore
from kindmem_client._base import Id, segment
from kindmem_client.types import WebhookEndpointCreated, WebhookEndpointList


class AsyncWebhooks(AsyncCore):
    """`/v1/webhooks`."""

    async def list_webhooks(self) -> WebhookEndpointList:
        """The tenant's webhook endpoints, oldest first (their secrets are not shown again)."""
        return cast(WebhookEndpointList, await self._json("GET", "/v1/webhooks"))

    async def create_webhook(
        self,
        url: str,
        events: Sequence[str],
        *,
        include_content: bool = False,
        enabled: bool = True,
        description: str = "",
    ) -> WebhookEndpointCreated:
        """Register an endpoint for `events`; the answer's `secret` is shown this once (verify
        each delivery with `kindmem_client.webhooks.verify_webhook`)."""
        body = {
            "url": url,
            "events": list(events),
            "include_content": include_content,
            "enabled": enabled,
            "description": description,
        }
        return cast(WebhookEndpointCreated, await self._json("POST", "/v1/webhooks", json=body))

    async def delete_webhook(self, endpoint_id: Id) -> None:
        """Delete an endpoint: nothing more is sent to it."""
        response = await self.request("DELETE", f"/v1/webhooks/{segment(endpoint_id)}")
        await response.aclose()
