"""The seed's `isReadableBy`, in Python, case for case: the reference the SQL guard is tested
against (`facts.models.scope_guard`). No read path calls it; every read filters in SQL.

A scope is a mapping with any of `org_id`, `project_id`, `user_id`, `participant_id`,
`thread_id`, `session_id`; a missing key or a None value means the scope does not name that
container.
"""

from __future__ import annotations

from collections.abc import Mapping

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
