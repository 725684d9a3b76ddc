"""The seed's guards in Python, ported case for case: the test oracles the SQL guards in
`kindmem/guards.py` are held against (no read path calls them).

- `is_readable_by`: `@kindgi/memory`'s `isReadableBy`, over a fact's scope (a mapping with any
  of `org_id`, `project_id`, `user_id`, `participant_id`, `thread_id`, `session_id`; a missing
  key or a None value means the scope does not name that container).
- `is_recall_readable_by`: its `isRecallReadableBy`, over a conversation (`RecallRow`).
  Stricter than facts': a conversation is always someone's, so an app's credential never
  opens an end user's conversation through `user_ids`, only `on_behalf_of_project_ids`.
- `is_run_readable_by`: the recall rule applied to a run (a run always has a project).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kindmem.access import Readers


def is_readable_by(scope: Mapping[str, str | None], readers: Readers) -> bool:
    """Whether `readers` may see a fact in `scope` (@kindgi/memory `isReadableBy`).

    Each container the scope names must be one the readers have: its project (or one they act
    in for all end users); its org, for an org-wide fact (no project); its user; its
    participant, or the project on behalf of all of them; its thread, or the project on behalf
    of all of them. A fact naming none of them is tenant-wide. The session is not a container.
    """
    if readers.all:
        return True
    project = scope.get("project_id")
    org = scope.get("org_id")
    user = scope.get("user_id")
    participant = scope.get("participant_id")
    thread = scope.get("thread_id")
    on_behalf = project is not None and project in readers.on_behalf_of_project_ids
    if project is not None and not (project in readers.project_ids or on_behalf):
        return False
    if project is None and org is not None and org not in readers.org_ids:
        return False
    if user is not None and user not in readers.user_ids:
        return False
    if participant is not None and not (participant in readers.participant_ids or on_behalf):
        return False
    return not (thread is not None and not (thread in readers.thread_ids or on_behalf))


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


def is_run_readable_by(run: dict[str, Any], readers: Readers) -> bool:
    """Python reference of `run_readable_q`, case for case from the seed's `isRecallReadableBy`
    (a run always has a project). `run` maps project_id, participant_id, user_id, thread_id to
    strings or None. Used by tests only."""
    if readers.all:
        return True

    def has(ids: frozenset[str], value: str | None) -> bool:
        return value is not None and value in ids

    project = run["project_id"]
    on_behalf = has(readers.on_behalf_of_project_ids, project)
    if not (has(readers.project_ids, project) or on_behalf):
        return False
    if run["participant_id"] is not None:
        is_person = has(readers.participant_ids, run["participant_id"])
    else:
        is_person = has(readers.user_ids, run["user_id"])
    return is_person or has(readers.thread_ids, run["thread_id"]) or on_behalf
