"""Beat's resume_extractions: a job whose message was lost, or whose worker died, runs again;
one still fresh is left to its own worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from extraction.models import ExtractionJob, JobStatus
from extraction.services import extraction_request
from extraction.tasks import resume_extractions
from tests.extraction.conftest import add

pytestmark = pytest.mark.django_db


def test_a_lost_or_abandoned_job_is_run_again_and_a_fresh_one_is_left(
    settings, llm, declared, conversation, eager_tasks
):
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    job = extraction_request(principal=declared.app.principal, conversation_id="conv-1").job
    eager_tasks()
    # a job queued just now is its own worker's
    assert resume_extractions() == 0
    # one whose worker died mid-run (started before the task's hard limit) is taken again
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 5)
    ExtractionJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=long_ago, attempts=1
    )
    assert resume_extractions() == 1
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.APPLIED, 2)
    assert len(llm.chats) == 1


def test_a_job_whose_message_was_lost_is_queued_again(
    settings, llm, declared, conversation, eager_tasks
):
    job = extraction_request(principal=declared.app.principal, conversation_id="conv-1").job
    ExtractionJob.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.EXTRACTION_STALE_SECONDS + 1)
    )
    eager_tasks()
    assert resume_extractions() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.APPLIED
