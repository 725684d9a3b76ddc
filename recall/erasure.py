"""Recall's part of an erasure: the person's conversations and their messages (or the one
conversation of a conversation target).

A batch deletes at most `limit` messages of the first conversation (by primary key) that still
names the target; a conversation left without messages is deleted in the same batch. A deleted
row no longer matches, so a resumed batch carries on with what is left (idempotent). Messages
of other people in the person's conversation go with it: the conversation is the unit.
"""

from __future__ import annotations

from kindmem.erasure import BatchResult, ErasureTarget, StepPreview
from recall.models import Conversation, Message
from recall.querysets import ConversationQuerySet


def conversations_of(target: ErasureTarget) -> ConversationQuerySet:
    """The target's conversations in its tenant (`Conversation.objects.about`)."""
    return Conversation.objects.of_tenant(target.tenant_id).about(target.subject)


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    erased: list[str] = []
    budget = limit
    conversations = conversations_of(target)
    for conversation_id in conversations.order_by("id").values_list("id", flat=True):
        message_ids = list(
            Message.objects.filter(conversation_id=conversation_id)
            .order_by("id")
            .values_list("id", flat=True)[:budget]
        )
        Message.objects.filter(pk__in=message_ids).delete()
        erased += [f"message:{i}" for i in message_ids]
        budget -= len(message_ids)
        if budget <= 0:
            return BatchResult(erased=erased, done=False)
        Conversation.objects.filter(pk=conversation_id).delete()
        erased.append(f"conversation:{conversation_id}")
        budget -= 1
        if budget <= 0:
            return BatchResult(erased=erased, done=False)
    return BatchResult(erased=erased, done=True)


def preview(target: ErasureTarget) -> StepPreview:
    """Rows this step would erase: the conversations and their messages."""
    conversations = conversations_of(target)
    return StepPreview(
        counts={
            "conversation": conversations.count(),
            "message": Message.objects.filter(conversation__in=conversations).count(),
        }
    )
