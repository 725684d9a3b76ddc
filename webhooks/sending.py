"""One signed POST of a webhook, bounded in time, to the address that was checked.

Signed as Standard Webhooks sign (standardwebhooks.com; its Python package): `webhook-id` (the
event's id, the same on every retry: what a receiver deduplicates on), `webhook-timestamp`
(this attempt's, so a receiver can refuse replays) and `webhook-signature` (`v1,` + base64 of
HMAC-SHA256 over "id.timestamp.body" with the endpoint's secret).

The socket's timeout (`WEBHOOK_TIMEOUT_SECONDS`) bounds the connect and every read, and the
answer's body is not read past a few bytes: a receiver that answers slowly costs the worker at
most about that long, then the attempt counts as failed and is retried later.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import datetime

from standardwebhooks import Webhook

from webhooks.addresses import Target

USER_AGENT = "kindmem-webhooks/1"


@dataclass(frozen=True)
class Sent:
    status_code: int | None
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def signed_headers(*, secret: str, msg_id: str, at: datetime, body: bytes) -> dict[str, str]:
    signature = Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to the checked address, with the host's name for SNI and the certificate."""

    def __init__(self, target: Target, timeout: float) -> None:
        self._tls = ssl.create_default_context()  # the system's CAs, the hostname checked
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Sent:
    """POST `body` to `target`; what the receiver answered, or why nothing came back."""
    started = time.monotonic()
    connection: http.client.HTTPConnection
    if target.scheme == "https":
        connection = _PinnedHTTPS(target, timeout)
    else:
        connection = http.client.HTTPConnection(target.address, target.port, timeout=timeout)
    default_port = 443 if target.scheme == "https" else 80
    host = target.host if target.port == default_port else f"{target.host}:{target.port}"
    try:
        connection.request(
            "POST",
            target.path,
            body=body,
            headers={
                **headers,
                "Host": host,
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
            },
        )
        response = connection.getresponse()
        response.read(1024)  # a receiver's body is not kept, and not waited for
        status, error = response.status, ""
        if not 200 <= status < 300:
            error = f"HTTP {status}"
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        status = None
        error = "timed out" if isinstance(exc, TimeoutError) else exc.__class__.__name__
        detail = str(exc)
        if detail and not isinstance(exc, TimeoutError):
            error = f"{error}: {detail}"[:500]
    finally:
        connection.close()
    return Sent(status, error, int((time.monotonic() - started) * 1000))
