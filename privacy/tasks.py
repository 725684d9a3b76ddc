from __future__ import annotations

import uuid
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from kindmem.row_security import each_tenant, tenant_context
from privacy.erasure import erasure_run
from privacy.exports import access_export_build
from privacy.models import AccessRequest, ErasureRequest, RequestStatus


@shared_task(name="privacy.tasks.erase_subject", acks_late=True, max_retries=3)
def erase_subject(erasure_id: str, tenant_id: str) -> str | None:
    """Run or resume one erasure of `tenant_id` (idempotent: a finished one is left as it is)."""
    with tenant_context(tenant_id):
        request = erasure_run(erasure_id=uuid.UUID(erasure_id))
    return request.status if request else None


# soft_time_limit too: the global soft limit (CELERY_TASK_SOFT_TIME_LIMIT) is above 60 s, and
# Celery refuses to send a task whose soft limit exceeds its hard one.
@shared_task(name="privacy.tasks.resume_erasures", time_limit=60, soft_time_limit=50)
def resume_erasures(*, stale_only: bool = True) -> int:
    """Re-enqueue erasures whose worker stopped (a crash, a lost message). Beat runs it."""
    resumed = 0
    for tenant_id in each_tenant():
        unfinished = ErasureRequest.objects.unfinished()
        if stale_only:
            stale = timezone.now() - timedelta(seconds=settings.ERASURE_STALE_SECONDS)
            unfinished = unfinished.filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))
        for erasure_id in unfinished.order_by("created_at").values_list("id", flat=True):
            erase_subject.delay(str(erasure_id), tenant_id=tenant_id)
            resumed += 1
    return resumed


@shared_task(name="privacy.tasks.resume_access_exports", time_limit=60, soft_time_limit=50)
def resume_access_exports(*, stale_only: bool = True) -> int:
    """Queue again the subject access requests still pending ACCESS_EXPORT_STALE_SECONDS after
    they were made: their message was lost, or never sent (the broker was down when the request
    committed). Beat runs it; building an export twice is safe."""
    resumed = 0
    for tenant_id in each_tenant():
        pending = AccessRequest.objects.filter(tenant_id=tenant_id, status=RequestStatus.PENDING)
        if stale_only:
            stale = timezone.now() - timedelta(seconds=settings.ACCESS_EXPORT_STALE_SECONDS)
            pending = pending.filter(created_at__lt=stale)
        for request_id in pending.order_by("created_at").values_list("id", flat=True):
            build_access_export.delay(str(request_id), tenant_id=tenant_id)
            resumed += 1
    return resumed


@worker_ready.connect
def resume_erasures_when_a_worker_starts(**_: object) -> None:
    # A worker that starts may be the one that replaced a crashed worker: resume at once
    # instead of waiting for the beat (running an erasure twice is safe).
    resume_erasures.delay(stale_only=False)


@shared_task(name="privacy.tasks.build_access_export", acks_late=True, max_retries=3)
def build_access_export(access_request_id: str, tenant_id: str) -> str | None:
    """Build one subject access export of `tenant_id` (idempotent: a finished export is left
    as it is)."""
    with tenant_context(tenant_id):
        try:
            request = access_export_build(access_request_id=uuid.UUID(access_request_id))
        except Exception as exc:
            AccessRequest.objects.filter(pk=access_request_id).update(
                status=RequestStatus.FAILED, error=f"{exc.__class__.__name__}: {exc}"[:2000]
            )
            raise
    return request.status if request else None
