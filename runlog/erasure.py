"""The run log's part of an erasure: clear the payloads of the person's runs (the chains keep
verifying) and take the person's id off those runs."""

from __future__ import annotations

from django.db.models import QuerySet

from kindmem import services as kindmem_services
from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from kindmem.models import Run
from runlog.services import log_payloads_erase


def _runs(target: ErasureTarget) -> QuerySet[Run]:
    return Run.objects.filter(tenant_id=target.tenant_id).about(target.subject)


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    run_ids = list(_runs(target).order_by("id").values_list("id", flat=True)[:limit])
    if not run_ids:
        return BatchResult(erased=[], done=True)
    log_payloads_erase(tenant_id=target.tenant_id, run_ids=run_ids)
    # Once its payloads are cleared the run no longer names the person, so the next batch
    # (or a resumed one) moves on to the runs that still do.
    kindmem_services.runs_forget_person(run_ids=run_ids, subject_kind=target.kind)
    return BatchResult(erased=[f"run:{run_id}" for run_id in run_ids], done=len(run_ids) < limit)


def preview(target: ErasureTarget) -> StepPreview:
    """Runs whose log payloads this step would clear."""
    return StepPreview(counts={"run": _runs(target).count()})
