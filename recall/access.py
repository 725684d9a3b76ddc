"""The recall guard, `isRecallReadableBy`, ported case for case from the seed (`recall.ts`).

This is the reference the SQL guard (`ConversationQuerySet.recall_readable_by`) is tested
against; no read path calls it. Stricter than facts' guard: a conversation is always someone's,
so an app's credential (one Kindgi user for all its end users) never opens an end user's
conversation through `user_ids`, only through `on_behalf_of_project_ids`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kindmem.access import Readers


@dataclass(frozen=True)
class RecallRow:
    """The containers a recalled message's conversation is in (ids as strings, None if absent)."""

    conversation_id: str
    project_id: str | None = None
    participant_id: str | None = None
    user_id: str | None = None


def _has(ids: Collection[str], value: str | None) -> bool:
    return value is not None and value in ids


def is_recall_readable_by(row: RecallRow, readers: Readers) -> bool:
    """Whether `readers` may recall a message of this conversation (the seed, case for case)."""
    if readers.all:
        return True
    project = row.project_id
    on_behalf = _has(readers.on_behalf_of_project_ids, project)
    # Its project: one the readers have, or act in for every end user.
    if project is not None and not (_has(readers.project_ids, project) or on_behalf):
        return False
    # Its person: the end user when there is one, else the Kindgi user its turns acted for.
    if row.participant_id is not None:
        is_person = _has(readers.participant_ids, row.participant_id)
    else:
        is_person = _has(readers.user_ids, row.user_id)
    return is_person or _has(readers.thread_ids, row.conversation_id) or on_behalf
