"""Fixtures for the extraction tests: the scripted chat-completions server
(tests/extraction/chat_server.py: a real local HTTP server, never a mock of Python), kindmem
configured to use it, and a world whose agent declares memory types and whose conversation has
messages; and a job requested and run as the worker runs it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extraction.models import ConversationExtraction, ExtractionJob
from extraction.provider import _configured
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from facts.models import Revision
from tests import factories
from tests.extraction.chat_server import (
    NOTHING,
    ChatServer,
    Reply,
    add,
    chat_server_running,
    completion,
    update,
)
from tests.recall.conftest import conversation_create

__all__ = ["NOTHING", "Reply", "add", "completion", "update"]

DECLARATIONS = [
    {"type": "preference", "scope": "participant", "keep_days": 90},
    {"type": "note", "scope": "thread", "keep_days": 30},
    {"type": "insight", "scope": "same-project", "keep_days": 365},
]


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with chat_server_running() as server:
        yield server


@pytest.fixture
def llm(settings: Any, chat_server: ChatServer) -> Iterator[ChatServer]:
    """kindmem configured with the scripted server as its chat model (no retries)."""
    settings.LLM_URL = chat_server.url
    settings.LLM_MODEL = "fake-llm-1"
    settings.LLM_API_KEY = "sk-test-secret"
    settings.LLM_TIMEOUT_SECONDS = 5.0
    settings.LLM_RETRIES = 0
    _configured.cache_clear()
    yield chat_server
    _configured.cache_clear()


@pytest.fixture
def declared(world: Any) -> Any:
    """The world's agent declares a participant, a thread and a project-wide type."""
    world.agent.memory_declarations = DECLARATIONS
    world.agent.save()
    return world


@pytest.fixture
def conversation(declared: Any) -> Any:
    """Conversation 'conv-1' of end user 'cust-1': three messages (user, agent, user) and a
    tool message."""
    return conversation_create(
        declared,
        "conv-1",
        ("user", "Hi, please email me rather than call, I hate phone calls."),
        ("agent", "Noted: email it is."),
        ("tool", '{"crm": "updated"}'),
        ("user", "Also I live in Lisbon now."),
        participant_id="cust-1",
    )


@pytest.fixture
def run(declared: Any) -> factories.Minted:
    """A run of the agent in the conversation 'conv-1' of 'cust-1'."""
    return factories.run_create(
        declared.app, declared.project, participant_id="cust-1", thread_id="conv-1"
    )


def requested(world: Any, conversation_id: str = "conv-1") -> ExtractionJob:
    opened = extraction_request(principal=world.app.principal, conversation_id=conversation_id)
    assert opened.job is not None
    return opened.job


def run_task(job: ExtractionJob) -> ExtractionJob:
    """The task, as a worker runs it (its tenant context included)."""
    extract_conversation(str(job.id), tenant_id=str(job.tenant_id))
    job.refresh_from_db()
    return job


def revisions(world: Any) -> int:
    return Revision.objects.filter(tenant_id=world.tenant.id).count()


def watermark(conversation: Any) -> int:
    return ConversationExtraction.objects.get(conversation=conversation).extracted_through
