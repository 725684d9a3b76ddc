"""Checking that a webhook came from kindmem: the Standard Webhooks signature.

kindmem signs each delivery as Standard Webhooks (standardwebhooks.com) specify: `webhook-id`,
`webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,` + base64 of HMAC-SHA256 of
"id.timestamp.body" under the endpoint's secret, "whsec_" + base64). Verify the body's bytes
exactly as received, before parsing them; deduplicate on `webhook-id` (a delivery can arrive
more than once)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

# how far a delivery's timestamp may be from the receiver's clock (replays, clock skew)
TOLERANCE_SECONDS = 300


class WebhookVerificationError(Exception):
    """The delivery is not one kindmem signed with this secret, or it is too old."""


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix("whsec_") + "==")


def verify_webhook(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_seconds: int = TOLERANCE_SECONDS,
    now: float | None = None,
) -> dict[str, Any]:
    """The delivery's payload ({"type", "timestamp", "data"}) when `headers` sign `body` under
    `secret` within `tolerance_seconds` of now; else `WebhookVerificationError`."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    lowered = {k.lower(): v for k, v in headers.items()}
    msg_id = lowered.get("webhook-id")
    stamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not (msg_id and stamp and signatures):
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or signature.")
    try:
        sent_at = int(stamp)
    except ValueError:
        raise WebhookVerificationError("The timestamp is not a number.") from None
    if abs((time.time() if now is None else now) - sent_at) > tolerance_seconds:
        raise WebhookVerificationError("The timestamp is too far from now.")
    signed = f"{msg_id}.{sent_at}.".encode() + raw
    expected = base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest())
    for versioned in signatures.split(" "):
        version, _, given = versioned.partition(",")
        if version == "v1" and hmac.compare_digest(given.encode(), expected):
            payload: dict[str, Any] = json.loads(raw)
            return payload
    raise WebhookVerificationError("No signature matches.")
