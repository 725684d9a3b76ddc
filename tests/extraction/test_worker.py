"""Extraction end to end: a real Celery worker process runs a queued job against the scripted
chat server, and a duplicated message writes nothing twice."""

from __future__ import annotations

import signal
import time
import uuid
from types import SimpleNamespace

import pytest

from extraction.models import ExtractionDecision, ExtractionJob, JobStatus
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from facts.models import Revision
from kindmem.models import WorkerHeartbeat
from kindmem.tasks import record_heartbeat
from tests import factories
from tests.extraction.conftest import DECLARATIONS, add
from tests.kindmem.test_worker import _start_worker
from tests.recall.conftest import conversation_create


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_extracts_once_however_often_the_task_is_delivered(
    tmp_path, monkeypatch, worker_broker, llm
):
    # given a conversation whose agent declares memory types, and an extraction asked for
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    agent = factories.agent_create(tenant)
    agent.memory_declarations = DECLARATIONS
    agent.save()
    app = factories.app_key_create(tenant, [project])
    world = SimpleNamespace(tenant=tenant, project=project, agent=agent, app=app)
    conversation_create(world, "conv-w", ("user", "Please only email me."), participant_id="cust-9")
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    job = extraction_request(principal=app.principal, conversation_id="conv-w").job
    assert job is not None
    # and a worker that knows the chat model
    monkeypatch.setenv("KINDMEM_LLM_URL", llm.url)
    monkeypatch.setenv("KINDMEM_LLM_MODEL", "fake-llm-1")
    worker = _start_worker(tmp_path, worker_broker.url)
    try:
        # when the task is delivered twice (a duplicated message)
        for _ in range(2):
            extract_conversation.apply_async(
                args=[str(job.id)],
                kwargs={"tenant_id": str(tenant.id)},
                connection=worker_broker.connection,
            )
        # then the worker applies the job
        deadline = time.monotonic() + 90
        while ExtractionJob.objects.get(pk=job.pk).status != JobStatus.APPLIED:
            assert worker.poll() is None, worker.stderr.read().decode() if worker.stderr else ""
            assert time.monotonic() < deadline, ExtractionJob.objects.get(pk=job.pk).status
            time.sleep(0.2)
        # (a heartbeat queued after the duplicate runs after it: one process, one queue)
        token = uuid.uuid4().hex
        record_heartbeat.apply_async(args=[token], connection=worker_broker.connection)
        while not WorkerHeartbeat.objects.filter(token=token).exists():
            assert time.monotonic() < deadline, "the worker did not get to the heartbeat"
            time.sleep(0.2)
        # and the memory is written once, the model asked once
        assert ExtractionDecision.objects.filter(job=job).count() == 1
        written = Revision.objects.filter(tenant_id=tenant.id, content={"text": "Prefers email."})
        assert written.count() == 1
        assert len(llm.chats) == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
