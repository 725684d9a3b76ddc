"""Recall's part of an erasure: the person's conversations and their messages (or the one
conversation of a conversation target).

A batch deletes at most `limit` messages of the first conversation (by primary key) that still
names the target; a conversation left without messages is deleted in the same batch. A deleted
row no longer matches, so a resumed batch carries on with what is left (idempotent). Messages
of other people in the person's conversation go with it: the conversation is the unit.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.db.models import Q

from kindmem.models import SubjectKind
from recall.models import Conversation, Message

if TYPE_CHECKING:
    from privacy.erasure import BatchResult, ErasureTarget


def conversations_of(target: ErasureTarget) -> Q | None:
    """A Q over Conversation naming the target's conversations; None when none can match."""
    kind = SubjectKind(target.kind)
    if kind == SubjectKind.PARTICIPANT:
        return Q(participant_id=target.id)
    if kind == SubjectKind.USER:
        try:
            return Q(user_id=uuid.UUID(target.id))
        except ValueError:
            return None
    if kind == SubjectKind.CONVERSATION:
        return Q(thread_id=target.id)
    return None  # an external subject has no conversations


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    from privacy.erasure import BatchResult

    condition = conversations_of(target)
    if condition is None:
        return BatchResult(erased=[], done=True)
    erased: list[str] = []
    budget = limit
    conversations = Conversation.objects.filter(condition, tenant_id=target.tenant_id)
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


def estimate(target: ErasureTarget) -> int:
    """Rows this step will erase (messages and conversations), for the progress bar."""
    condition = conversations_of(target)
    if condition is None:
        return 0
    conversations = Conversation.objects.filter(condition, tenant_id=target.tenant_id)
    return conversations.count() + Message.objects.filter(conversation__in=conversations).count()
