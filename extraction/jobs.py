"""Opening an extraction job: the next range of a conversation's messages after its watermark,
at most one job at a time per conversation, under the caps. No queueing here (the caller
queues `extract_conversation` when its transaction commits), so the task's own code may open
the next job of a long conversation without importing the module that queues it."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from extraction.metering import quota_check
from extraction.models import ConversationExtraction, ExtractionJob
from kindmem.services import Acting, run_start_internal
from recall.models import Conversation


@dataclass(frozen=True)
class Opened:
    job: ExtractionJob | None  # None: nothing new since the watermark
    created: bool
    extracted_through: int
    last_sequence: int


def watermark_lock(conversation: Conversation) -> ConversationExtraction:
    """The conversation's watermark row, made on first use, row-locked: a conversation's
    requests and applies queue here, so each sees what the one before it did."""
    ConversationExtraction.objects.bulk_create(
        [ConversationExtraction(tenant_id=conversation.tenant_id, conversation=conversation)],
        ignore_conflicts=True,
    )
    return ConversationExtraction.objects.select_for_update().get(
        tenant_id=conversation.tenant_id, conversation=conversation
    )


def job_open(*, conversation: Conversation, acting: Acting, requested_by: str) -> Opened:
    """The conversation's queued or running job if it has one; else a new one for the messages
    after the watermark (at most KINDMEM_EXTRACTION_MAX_MESSAGES of them, the oldest first),
    with the run it writes as, made for `acting` (the conversation's containers that whoever
    asked stands for: `kindmem.services.acting_for`); else (nothing new) none.
    `extraction-quota` when a cap is reached. Call it inside a transaction: the watermark stays
    locked until it ends."""
    mark = watermark_lock(conversation)
    last = Conversation.objects.filter(pk=conversation.pk).values_list("last_sequence", flat=True)
    last_sequence = last.get()
    active = (
        ExtractionJob.objects.of_tenant(conversation.tenant_id)
        .active()
        .filter(conversation=conversation)
        .first()
    )
    if active is not None:
        return Opened(active, False, mark.extracted_through, last_sequence)
    first = mark.extracted_through + 1
    if first > last_sequence:
        return Opened(None, False, mark.extracted_through, last_sequence)
    quota_check(tenant_id=conversation.tenant_id, mark=mark)
    run = run_start_internal(
        tenant_id=conversation.tenant_id,
        agent=conversation.agent,
        project_id=acting.project_id,
        participant_id=acting.participant_id,
        user_id=acting.user_id,
        thread_id=acting.thread_id,
    )
    job = ExtractionJob.objects.create(
        tenant_id=conversation.tenant_id,
        conversation=conversation,
        run=run,
        agent=conversation.agent,
        first_sequence=first,
        last_sequence=min(last_sequence, first + settings.EXTRACTION_MAX_MESSAGES - 1),
        requested_by=requested_by[:200],
    )
    return Opened(job, True, mark.extracted_through, last_sequence)
