"""embed_messages end to end: a real worker process embeds what the write path left pending."""

from __future__ import annotations

import signal
import time
from types import SimpleNamespace

import pytest

from recall.models import Message
from recall.tasks import embed_messages
from tests import factories
from tests.kindmem.test_worker import _start_worker
from tests.recall.conftest import conversation_create


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_embeds_pending_messages(tmp_path, monkeypatch, worker_broker):
    # given messages stored while this process had no embedder
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    agent = factories.agent_create(tenant)
    app = factories.app_key_create(tenant, [project])
    world = SimpleNamespace(tenant=tenant, project=project, agent=agent, app=app)
    conversation_create(world, "c1", ("user", "hello"), ("tool", "{}"), participant_id="p")
    ids = list(Message.objects.order_by("sequence").values_list("id", flat=True))
    # and a worker whose embedder is configured
    monkeypatch.setenv("KINDMEM_EMBEDDER", "hashing")
    worker = _start_worker(tmp_path, worker_broker.url)
    try:
        # when the task is queued
        embed_messages.apply_async(
            args=[ids], kwargs={"tenant_id": str(tenant.id)}, connection=worker_broker.connection
        )
        # then the worker embeds the user's message, never the tool's
        deadline = time.monotonic() + 60
        while not Message.objects.filter(id=ids[0], embedding__isnull=False).exists():
            assert worker.poll() is None, worker.stderr.read().decode() if worker.stderr else ""
            assert time.monotonic() < deadline, "the worker did not embed within 60 s"
            time.sleep(0.2)
        assert Message.objects.get(id=ids[0]).embedding_model == "kindmem-hashing-v1"
        assert Message.objects.get(id=ids[1]).embedding is None
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
