"""Extraction's writes: asking for a conversation's extraction (the API's `POST
/v1/conversations/{id}/extract`, and "after each appended batch" for the agents a tenant's
settings name), which opens a job and queues its task when the request commits.

The memories themselves are written by the task (`extraction.runner`), as the job's run, through
the writes an agent's memories always take: `remember` and its review rules for an add, a
proposed supersede for a reviewer for an update.
"""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from api.background import enqueue_on_commit
from api.errors import (
    ErasureInProgress,
    ExtractionQuota,
    Forbidden,
    NotFound,
    ValidationFailed,
)
from extraction.jobs import Opened, job_open
from extraction.models import ExtractionSettings
from extraction.provider import get_provider, require_provider
from extraction.tasks import extract_conversation
from kindmem import declarations
from kindmem.access import Principal, PrincipalKind, readers_for
from kindmem.holds import assert_not_held
from kindmem.services import acting_for
from kindmem.subjects import persons_of
from recall.models import Conversation

logger = logging.getLogger(__name__)


@transaction.atomic
def extraction_request(*, principal: Principal, conversation_id: str) -> Opened:
    """Extract memories from the conversation's messages since its watermark, in the
    background: the job queued now (or the one already queued or running, answered again), or
    none when nothing is new.

    Who may: a run token or an app key that may recall the conversation (`isRecallReadableBy`:
    another person's conversation, another project's or tenant's, is `not-found`, like one
    that does not exist). Refused, queueing nothing: a person or conversation under erasure
    (`erasure-in-progress`), no chat model (`extraction-unavailable`), an agent that declares
    no memory types (`validation-error`), a cap reached (`extraction-quota`).

    The job's run is made for the conversation's containers that this credential stands for
    (`acting_for`, the rule of minting a run): an app's never names a Kindgi user, so the model
    is shown, and the job writes, nothing of a person's own that the app may not read."""
    if principal.kind not in {PrincipalKind.RUN, PrincipalKind.APP}:
        raise Forbidden("Only a run token or an app credential asks for an extraction.")
    conversation = (
        Conversation.objects.of_tenant(principal.tenant_id)
        .recall_readable_by(readers_for(principal))
        .filter(thread_id=conversation_id)
        .select_related("agent")
        .first()
    )
    if conversation is None:
        raise NotFound("No such conversation.")
    assert_not_held(
        principal.tenant_id,
        persons_of(
            participant_id=conversation.participant_id,
            user_id=conversation.user_id,
            thread_id=conversation.thread_id,
        ),
    )
    require_provider()
    return _opened(conversation, principal=principal, requested_by=principal.id)


def extraction_after_append(*, conversation: Conversation, principal: Principal) -> None:
    """After `principal` appended a batch of messages: extract them, as far as it may read and
    write (as `extraction_request`), when a chat model is configured and the tenant's settings
    name the conversation's agent (`extract_after_append`). Inside the append's transaction,
    in a savepoint of its own: what cannot be queued now (a cap, a held person, no declared
    types) is logged and left for the next batch; the append stands."""
    if get_provider() is None:
        return  # no model: no query either, so an append costs what it did without extraction
    agents = (
        ExtractionSettings.objects.filter(tenant_id=conversation.tenant_id)
        .values_list("extract_after_append", flat=True)
        .first()
    )
    if not agents or conversation.agent.agent_id not in agents:
        return
    try:
        with transaction.atomic():
            assert_not_held(
                conversation.tenant_id,
                persons_of(
                    participant_id=conversation.participant_id,
                    user_id=conversation.user_id,
                    thread_id=conversation.thread_id,
                ),
            )
            _opened(conversation, principal=principal, requested_by="after-append")
    except (ErasureInProgress, ExtractionQuota, Forbidden, ValidationFailed) as exc:
        logger.info("no extraction after the append to %s: %s", conversation.thread_id, exc)


def _opened(conversation: Conversation, *, principal: Principal, requested_by: str) -> Opened:
    agent = conversation.agent
    if not declarations.parse(agent.memory_declarations):
        raise ValidationFailed(
            f"Agent {agent.agent_id!r} declares no memory types to extract.",
            details={"agent_id": agent.agent_id},
        )
    if conversation.project_id is None:
        raise ValidationFailed("A conversation without a project has no run to extract as.")
    acting = acting_for(
        principal=principal,
        project_id=conversation.project_id,
        participant_id=conversation.participant_id,
        user_id=conversation.user_id,
        thread_id=conversation.thread_id,
    )
    opened = job_open(conversation=conversation, acting=acting, requested_by=requested_by)
    if opened.created and opened.job is not None:
        # a broker that cannot be reached does not fail the request: resume_extractions sends it
        enqueue_on_commit(
            extract_conversation, str(opened.job.id), tenant_id=str(conversation.tenant_id)
        )
    return opened


def extraction_settings_set(*, tenant_id: uuid.UUID | str, review_all: bool) -> None:
    """Whether every memory extraction adds for the tenant waits for review (`extracted`),
    whatever its type's rules say: the setting the console edits."""
    ExtractionSettings.objects.update_or_create(
        tenant_id=tenant_id, defaults={"review_all": review_all}
    )
