"""What runs when a batch of messages has been appended to a conversation: the hook the
extraction app plugs in (`ExtractionConfig.ready`), which extracts memories after each batch
for the agents its tenant's settings name.

Not a signal: there is one such hook, called in the append's transaction (what it opens commits
with the messages, or not at all), and recall may not import extraction (imports run one way:
recall <- approvals <- extraction). A hook never fails the append: what it cannot do now it
leaves for the next batch, or for an explicit `POST .../extract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from recall.models import Conversation


class AfterAppend(Protocol):
    def __call__(self, *, conversation: Conversation) -> None: ...


_hooks: list[AfterAppend] = []


def after_append_connect(hook: AfterAppend) -> None:
    """Install a hook (once, when Django starts); installing the same one again does nothing."""
    if hook not in _hooks:
        _hooks.append(hook)


def after_append(*, conversation: Conversation) -> None:
    """Run the installed hooks for a conversation a batch was just appended to."""
    for hook in _hooks:
        hook(conversation=conversation)
