"""Verifying a run's stored log against its hash chain (`runlog.chain` is the encoding)."""

from __future__ import annotations

from typing import Any

from runlog.chain import VERIFY_COLUMNS, Verification, verify_rows
from runlog.models import LogEntry


def verify_run(run: Any) -> Verification:
    """Walk `run`'s log from genesis, recomputing every hash (see the module docstring)."""
    rows = (
        LogEntry.objects.filter(tenant_id=run.tenant_id, run_id=run.pk)
        .order_by("sequence")
        .values_list(*VERIFY_COLUMNS)
        .iterator(chunk_size=2000)
    )
    return verify_rows(rows)
