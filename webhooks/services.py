"""Endpoints, registered and deleted by a tenant admin (the API and the console)."""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from api.errors import NotFound, ValidationFailed
from webhooks.addresses import UnsafeURL, target_of
from webhooks.models import Endpoint, EventKind
from webhooks.outbox import subscriptions_changed


def secret_new() -> str:
    """A Standard Webhooks secret: "whsec_" and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def url_check(url: str) -> None:
    """`validation-error` (400) on `url` when kindmem will not send to it (addresses.py)."""
    try:
        target_of(url)
    except UnsafeURL as exc:
        raise ValidationFailed(str(exc), details={"url": [str(exc)]}) from None


@transaction.atomic
def endpoint_register(
    *,
    tenant_id: uuid.UUID,
    url: str,
    events: Sequence[str],
    include_content: bool = False,
    enabled: bool = True,
    description: str = "",
    created_by: str = "",
) -> Endpoint:
    """Register an endpoint for `events` with a fresh secret (returned on the row, shown once).
    A URL to a loopback or private address is refused unless the operator allows those."""
    url_check(url)
    unknown = sorted(set(events) - set(EventKind.values))
    if unknown or not events:
        raise ValidationFailed(details={"events": [f"Each one of {', '.join(EventKind.values)}."]})
    endpoint = Endpoint.objects.create(
        tenant_id=tenant_id,
        url=url,
        events=sorted(set(events)),
        secret=secret_new(),
        include_content=include_content,
        enabled=enabled,
        description=description,
        created_by=created_by,
    )
    subscriptions_changed(tenant_id)
    return endpoint


def endpoint_get(*, tenant_id: uuid.UUID, endpoint_id: uuid.UUID | str) -> Endpoint:
    """A live endpoint of the tenant, or `not-found`."""
    try:
        pk = uuid.UUID(str(endpoint_id))
    except ValueError:
        raise NotFound("No such webhook endpoint.") from None
    endpoint = Endpoint.objects.filter(tenant_id=tenant_id, pk=pk, deleted_at__isnull=True).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


@transaction.atomic
def endpoint_delete(*, tenant_id: uuid.UUID, endpoint_id: uuid.UUID | str) -> None:
    """Stop sending to an endpoint: it gets no new event and its pending deliveries are not
    sent. Its row and history stay (the console shows them), its secret is forgotten."""
    endpoint = endpoint_get(tenant_id=tenant_id, endpoint_id=endpoint_id)
    Endpoint.objects.filter(pk=endpoint.pk).update(
        deleted_at=timezone.now(), enabled=False, secret=""
    )
