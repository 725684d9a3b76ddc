"""`AsyncClient`, its routes one module per group (client.py puts them together)."""

from __future__ import annotations

from kindmem_client._async.client import AsyncClient

__all__ = ["AsyncClient"]
