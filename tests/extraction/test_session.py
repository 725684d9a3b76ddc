"""The OpenAI Agents SDK session asks for an extraction when a turn's answer is saved
(`extract_after_turn`), and a refusal of that request never fails the turn. Over HTTP, to a
gunicorn on the test database, as the other session tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import pytest
from kindmem_client import Client, ExtractionUnavailable
from kindmem_client.openai_agents import KindmemSession

from extraction.models import ExtractionJob
from tests import factories
from tests.clients.conftest import live_url
from tests.extraction.conftest import DECLARATIONS

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["live_url"]  # the module's gunicorn without a chat model (tests/clients/conftest.py)

USER = {"role": "user", "content": "Email me, never call."}
ANSWER = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Email it is.", "annotations": []}],
}


def run(coroutine: Any) -> Any:
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="module")
def llm_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """A gunicorn whose extraction has a chat model (a request only queues here: the model's
    server is never called, so an address is all it needs)."""
    from tests.processes import web_server

    env = {"KINDMEM_LLM_URL": "http://127.0.0.1:1", "KINDMEM_LLM_MODEL": "queued-only"}
    with ExitStack() as stack:
        with django_db_blocker.unblock():
            base = stack.enter_context(web_server(env=env))
        yield base


def run_token() -> str:
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    agent = factories.agent_create(tenant)
    agent.memory_declarations = DECLARATIONS
    agent.save()
    app = factories.app_key_create(tenant, [project])
    return factories.run_create(app, project, participant_id="p-s", thread_id="chat-s").token


def test_a_session_asks_for_an_extraction_once_a_turn_is_answered(llm_url):
    with Client(run_token(), base_url=llm_url) as client:
        session = KindmemSession("chat-s", client, extract_after_turn=True)
        # the turn's input alone asks for nothing
        run(session.add_items([USER]))
        assert session.last_extraction is None
        # its answer does
        run(session.add_items([ANSWER]))
    assert isinstance(session.last_extraction, dict)
    assert session.last_extraction["outcome"] == "queued"
    job = ExtractionJob.objects.get()
    assert (job.first_sequence, job.last_sequence) == (1, 2)


def test_a_session_that_does_not_ask_never_extracts(llm_url):
    with Client(run_token(), base_url=llm_url) as client:
        session = KindmemSession("chat-s", client)
        run(session.add_items([USER, ANSWER]))
    assert session.last_extraction is None
    assert not ExtractionJob.objects.exists()


def test_without_a_model_the_turn_is_saved_and_the_refusal_kept(live_url):
    with Client(run_token(), base_url=live_url) as client:
        session = KindmemSession("chat-s", client, extract_after_turn=True)
        run(session.add_items([USER, ANSWER]))
        assert len(run(session.get_items())) == 2
    assert isinstance(session.last_extraction, ExtractionUnavailable)
    assert not ExtractionJob.objects.exists()
