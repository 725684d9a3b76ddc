"""What runs when a batch of messages has been appended to a conversation: the hooks
settings.AFTER_APPEND_HOOKS names (dotted paths, as MIDDLEWARE does), the extraction app's
among them: it extracts memories after each batch for the agents its tenant's settings name.

Not a signal: the hooks are called in the append's transaction (what they open commits with
the messages, or not at all), in the configured order, and recall may not import extraction
(imports run one way: recall <- approvals <- extraction). A hook never fails the append: what
it cannot do now it leaves for the next batch, or for an explicit `POST .../extract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from kindmem.access import Principal
    from recall.models import Conversation


class AfterAppend(Protocol):
    def __call__(self, *, conversation: Conversation, principal: Principal) -> None: ...


def after_append(*, conversation: Conversation, principal: Principal) -> None:
    """Run the configured hooks for a conversation `principal` just appended a batch to (what a
    hook does for the writer stays within what the writer may do: extraction's run is one it
    could have minted)."""
    for path in settings.AFTER_APPEND_HOOKS:
        hook: AfterAppend = import_string(path)
        hook(conversation=conversation, principal=principal)
