from __future__ import annotations

from celery import shared_task

from audit.services import audit_purge
from kindmem.row_security import each_tenant


@shared_task(name="audit.tasks.purge_audit_events", soft_time_limit=540, time_limit=600)
def purge_audit_events() -> int:
    """Delete audit events past their tenant's retention (beat runs it daily)."""
    return sum(audit_purge() for _ in each_tenant())
