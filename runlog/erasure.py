"""The run log's part of an erasure: clear the payloads of the person's runs (the chains keep
verifying) and take the person's id off those runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kindmem.models import Run, SubjectKind
from runlog.services import log_payloads_erase

if TYPE_CHECKING:
    from privacy.erasure import BatchResult, ErasureTarget

# Which Run column names the target, per kind; an external subject names no run.
_RUN_COLUMN = {
    SubjectKind.PARTICIPANT: "participant_id",
    SubjectKind.USER: "user_id",
    SubjectKind.CONVERSATION: "thread_id",
}


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    from privacy.erasure import BatchResult

    column = _RUN_COLUMN.get(SubjectKind(target.kind))
    if column is None:
        return BatchResult(erased=[], done=True)
    runs = Run.objects.filter(tenant_id=target.tenant_id, **{column: target.id})
    run_ids = list(runs.order_by("id").values_list("id", flat=True)[:limit])
    if not run_ids:
        return BatchResult(erased=[], done=True)
    log_payloads_erase(tenant_id=target.tenant_id, run_ids=run_ids)
    # Once its payloads are cleared the run no longer names the person, so the next batch
    # (or a resumed one) moves on to the runs that still do.
    Run.objects.filter(pk__in=run_ids).update(**{column: None})
    return BatchResult(erased=[f"run:{run_id}" for run_id in run_ids], done=len(run_ids) < limit)


def estimate(target: ErasureTarget) -> int:
    """Runs this step will clear, for the progress bar."""
    column = _RUN_COLUMN.get(SubjectKind(target.kind))
    if column is None:
        return 0
    return Run.objects.filter(tenant_id=target.tenant_id, **{column: target.id}).count()
