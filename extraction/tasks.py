"""Background work of extraction: running a job, and the beat sweep that queues again the jobs
whose message was lost (or never sent) or whose worker died. Both are safe to run twice: a job
is claimed by a conditional UPDATE (`extraction.runner`)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from api.background import enqueue_now
from extraction.models import ExtractionJob
from extraction.runner import extraction_run
from kindmem.row_security import each_tenant, tenant_context


@shared_task(name="extraction.tasks.extract_conversation", acks_late=True)
def extract_conversation(job_id: str, tenant_id: str) -> str | None:
    """Run the extraction job `job_id` of `tenant_id`, then queue the conversation's next one
    when its messages go on past this job's range."""
    with tenant_context(tenant_id):
        next_job = extraction_run(job_id=job_id)
    if next_job is not None:
        # a broker that cannot be reached leaves it queued: resume_extractions sends it
        enqueue_now(extract_conversation, next_job, tenant_id=tenant_id)
    return next_job


@shared_task(name="extraction.tasks.resume_extractions", time_limit=60, soft_time_limit=50)
def resume_extractions() -> int:
    """Queue again the jobs queued KINDMEM_EXTRACTION_STALE_SECONDS ago and never started, and
    those running past the task's hard time limit (their worker is gone). Beat runs it."""
    now = timezone.now()
    queued_before = now - timedelta(seconds=settings.EXTRACTION_STALE_SECONDS)
    running_before = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    resumed = 0
    for tenant_id in each_tenant():
        stale = ExtractionJob.objects.of_tenant(tenant_id).stale(queued_before, running_before)
        for job_id in stale.order_by("created_at").values_list("id", flat=True)[:500]:
            extract_conversation.delay(str(job_id), tenant_id=tenant_id)
            resumed += 1
    return resumed
