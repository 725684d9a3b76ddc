"""`Client`, its routes one module per group (client.py puts them together).

Written from `kindmem_client/_async/__init__.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

from kindmem_client._sync.client import Client

__all__ = ["Client"]
