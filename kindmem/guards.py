"""The reader guards, compiled to SQL: the one definition of each, for every read path.

- `fact_guard`: the seed's `isReadableBy` over a fact's scope columns.
- `recall_guard`: the seed's `isRecallReadableBy` over a conversation's columns, but for a
  Kindgi user's own conversation, which acting for a project's end users does not open.
- `run_guard`: the same recall rule applied to a run (a run always has a project).

Each returns a `Q` over the row reached through `prefix` ("" on the row itself, "fact__" from a
revision, "conversation__" from a message, "run__" from a log entry), to be applied inside the
query before any LIMIT. The seed's Python ports, which these are tested against case for case,
live in `tests/oracles.py`: no read path calls them.

Ids in `Readers` are strings; the Python rules compare strings, so only a canonical UUID
spelling (`str(uuid)`) can equal a UUID column here, exactly as there.

A read may be narrowed (`narrowed_to`): a caller hands readers of its own (the seed's
`input.readers`, say a run's for one end user under an app's key), and a row must pass the
guard for them *and* for the credential's. The one guard applied twice: the intersection of
what each may read, which no single `Readers` value can express (an app key reads a participant
through its project, a narrowing names the participant itself). It never grants anything the
credential's readers do not, whatever it names, so it is intersected silently, never refused:
the seed's callers hand the readers of whom they act for, which name ids a key reads only
through its project, and refusing those (as the TypeScript binding once did, field by field)
turned an app key's narrower set into an error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q

from kindmem.access import Readers

NOTHING = Q(pk__in=[])  # a condition no row meets (Django compiles it to an empty result)


def canonical_uuids(values: Iterable[str]) -> list[uuid.UUID]:
    """The values that are a UUID in its canonical spelling; any other string matches no UUID
    column (the Python guards compare strings, and a UUID column renders canonically)."""
    out = []
    for value in values:
        try:
            parsed = uuid.UUID(value)
        except (ValueError, TypeError, AttributeError):
            continue
        if str(parsed) == value:
            out.append(parsed)
    return sorted(out)


def _lookup(prefix: str) -> Callable[..., Q]:
    """A Q builder whose lookups are reached through `prefix`."""

    def column(**lookup: Any) -> Q:
        return Q(**{f"{prefix}{name}": value for name, value in lookup.items()})

    return column


def narrowing(readers: Readers, narrowed_to: Readers | None) -> Readers | None:
    """The narrowing that can change what `readers` read, or None: none given, `all` (which
    narrows nothing) and the credential's own readers add no condition to the query."""
    if narrowed_to is None or narrowed_to.all or narrowed_to == readers:
        return None
    return narrowed_to


def fact_guard(readers: Readers, prefix: str = "", *, narrowed_to: Readers | None = None) -> Q:
    """`isReadableBy` for `readers` (and for `narrowed_to`, where given: both must pass) as a Q
    over a fact's scope columns (reached through `prefix`)."""
    narrower = narrowing(readers, narrowed_to)
    guard = _fact_guard(readers, prefix)
    return guard if narrower is None else guard & _fact_guard(narrower, prefix)


def _fact_guard(readers: Readers, prefix: str) -> Q:
    """`isReadableBy` as a Q over a fact's scope columns (reached through `prefix`).

    Each named container must be one the readers have: its project (or one they act in for
    all end users); its org, for an org-wide fact (no project); its user; its participant, or
    the project on behalf of all of them; its thread, or the project on behalf of all of them.
    An unnamed (NULL) container asks nothing; the session is not a container.
    """
    if readers.all:
        return Q()
    column = _lookup(prefix)
    projects = canonical_uuids(readers.project_ids)
    on_behalf = canonical_uuids(readers.on_behalf_of_project_ids)
    on_behalf_q = column(project_id__in=on_behalf)
    project_ok = column(project_id__isnull=True) | column(
        project_id__in=sorted(set(projects + on_behalf))
    )
    org_ok = (
        column(project_id__isnull=False)
        | column(org_id__isnull=True)
        | column(org_id__in=canonical_uuids(readers.org_ids))
    )
    user_ok = column(user_id__isnull=True) | column(user_id__in=canonical_uuids(readers.user_ids))
    participant_ok = (
        column(participant_id__isnull=True)
        | column(participant_id__in=sorted(readers.participant_ids))
        | on_behalf_q
    )
    thread_ok = (
        column(thread_id__isnull=True)
        | column(thread_id__in=sorted(readers.thread_ids))
        | on_behalf_q
    )
    return project_ok & org_ok & user_ok & participant_ok & thread_ok


def recall_guard(
    readers: Readers,
    prefix: str = "",
    *,
    project_required: bool = False,
    narrowed_to: Readers | None = None,
) -> Q:
    """`isRecallReadableBy` for `readers` (and for `narrowed_to`, where given: both must pass)
    as a Q over a conversation's (or a run's) columns."""
    narrower = narrowing(readers, narrowed_to)
    guard = _recall_guard(readers, prefix, project_required)
    return guard if narrower is None else guard & _recall_guard(narrower, prefix, project_required)


def _recall_guard(readers: Readers, prefix: str, project_required: bool) -> Q:
    """`isRecallReadableBy` as a Q over a conversation's (or a run's) columns.

    Stricter than facts': a conversation is always someone's. Its project must be one the
    readers have (or act in for every end user); then its person (the participant, else the
    Kindgi user), its thread, or the project on behalf of all end users opens it, the last
    unless its person is a Kindgi user (see below). The `__in` tests are false for NULL
    columns, which is the seed's "`id !== undefined`". A run always has a project
    (`project_required`): a NULL project then opens nothing.

    Where kindmem departs from the seed: the seed's `onBehalf` opens every conversation of the
    project, a Kindgi user's own (a user and no participant) included. An app's key acts for
    its project's end users and never reads a Kindgi user's personal scope (DESIGN rule 1;
    `_fact_guard` keeps that user's facts from it already), so here acting on behalf opens an
    end user's conversation or no one's, never a Kindgi user's; that user's own readers
    (`user_ids`), or being in it (`thread_ids`), still do. The same for a run and its log.
    """
    if readers.all:
        return Q()
    column = _lookup(prefix)
    on_behalf = canonical_uuids(readers.on_behalf_of_project_ids)
    projects = canonical_uuids(readers.project_ids | readers.on_behalf_of_project_ids)
    project_ok = NOTHING if project_required else column(project_id__isnull=True)
    if projects:
        project_ok |= column(project_id__in=projects)

    # The seed's `onBehalf` passes both clauses at once (its projects are among the readers'),
    # so it is written as its own branch: `project IN on_behalf OR (project ok AND person)`.
    # Equivalent, and the planner estimates it far better than the nested form.
    person: list[Q] = []
    if readers.participant_ids:
        person.append(column(participant_id__in=sorted(readers.participant_ids)))
    users = canonical_uuids(readers.user_ids)
    if users:
        person.append(column(participant_id__isnull=True, user_id__in=users))
    if readers.thread_ids:
        person.append(column(thread_id__in=sorted(readers.thread_ids)))
    branches = [project_ok & reduce(or_, person)] if person else []
    if on_behalf:
        # an end user's, or no one's: not a Kindgi user's own (user set, no participant)
        not_a_kindgi_users = column(participant_id__isnull=False) | column(user_id__isnull=True)
        branches.insert(0, column(project_id__in=on_behalf) & not_a_kindgi_users)
    if not branches:
        return NOTHING
    return reduce(or_, branches)


def run_guard(readers: Readers, prefix: str = "") -> Q:
    """The run log's guard: a run is a conversation (its project, its person, its thread), so
    the recall rule applies to it as it stands, with its project required."""
    return recall_guard(readers, prefix, project_required=True)
