"""Schemathesis hooks for the fuzz run (loaded with SCHEMATHESIS_HOOKS)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import schemathesis

_path = os.environ.get("KINDMEM_FUZZ_FORBIDDEN_IDS", "")
FORBIDDEN = [i for i in Path(_path).read_text().split() if i] if _path else []


@schemathesis.check
def no_other_tenants_ids(ctx: Any, response: Any, case: Any) -> None:
    """Tenant B's answers never contain an id that tenant A created. Read as bytes: a memory
    export is a zip, whose bytes need not decode as text."""
    leaked = [value for value in FORBIDDEN if value.encode() in response.content]
    if leaked:
        raise AssertionError(f"a response to tenant B contains tenant A's ids: {leaked}")
