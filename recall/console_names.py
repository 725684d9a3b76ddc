"""The console's names for conversations (`kindmem.console_names`): by their thread id, a link
to the conversation's page with its messages."""

from __future__ import annotations

from django.http import HttpRequest

from kindmem.console import console_scope
from kindmem.console_names import Key, Named, change_url, register, uuids
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
