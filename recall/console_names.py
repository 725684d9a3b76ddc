"""The console's names for conversations (`console.names`): by their thread id, a link
to the conversation's page with its messages."""

from __future__ import annotations

from django.http import HttpRequest

from console.names import Key, Named, change_url, register, uuids
from console.tenant_wall import console_scope
from recall.models import Conversation


def conversation_named(request: HttpRequest, conversation: Conversation) -> Named:
    return Named(conversation.thread_id, change_url(request, conversation), str(conversation.pk))


@register("conversation")
def _conversations(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Conversation.objects.filter(pk__in=wanted)).only(
        "id", "tenant_id", "thread_id"
    )
    return {wanted[c.pk]: conversation_named(request, c) for c in found}
