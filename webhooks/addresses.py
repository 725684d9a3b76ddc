"""Where a webhook may be sent: never to the service's own network unless the operator says so.

A URL a tenant admin registers is fetched by kindmem's worker, inside kindmem's network; one
naming a loopback, private, link-local or otherwise non-public address would let a tenant make
kindmem call its own internals (server-side request forgery). Every address the host resolves
to is checked, when the endpoint is registered and again before each POST, and the POST goes
to the address that was checked (`Target.address`), so a name that resolves elsewhere on the
second lookup (DNS rebinding) reaches nothing new. `WEBHOOKS_ALLOW_PRIVATE_URLS` (off by
default) lets an operator send to receivers on their own network, and the tests reach theirs.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings


class UnsafeURL(Exception):
    """A URL kindmem will not send to; the message says why (it names no resolved address)."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with its query
    address: str  # the IP the POST connects to


def _public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return _public(ip.ipv4_mapped)
    return ip.is_global and not ip.is_multicast


def target_of(url: str) -> Target:
    """Resolve `url` and check every address it names; raise UnsafeURL when it may not be
    sent to."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UnsafeURL("The URL must be http:// or https:// with a host.")
    if parts.username or parts.password:
        raise UnsafeURL("The URL may not carry credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeURL("The URL's port is not a number from 1 to 65535.") from exc
    try:
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise UnsafeURL("The URL's host does not resolve.") from exc
    addresses = [str(info[4][0]) for info in found]
    if not settings.WEBHOOKS_ALLOW_PRIVATE_URLS and not all(
        _public(ipaddress.ip_address(a.split("%")[0])) for a in addresses
    ):
        raise UnsafeURL(
            "The URL's host resolves to a loopback, private or otherwise non-public address; "
            "the operator may allow those (KINDMEM_WEBHOOKS_ALLOW_PRIVATE_URLS)."
        )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])
