"""Erasure holds: the one held-subject condition, for writes (refuse) and reads (exclude).

While an erasure runs, its hold names the person (or conversation); nothing new lands for
them and their data reads as nothing. After it, what it kept under legal hold stays frozen
(`frozen`): kept for the privacy officer, read and written by no credential.

Facts, conversations and runs all name their persons in the same three columns
(`participant_id`, `user_id`, `thread_id`), so one condition serves all.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db.models import CharField, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Cast

from api.errors import ErasureInProgress
from compiled import Read, compiled
from kindmem.models import ErasureHold, SubjectKind
from kindmem.subjects import Subject


def held_condition(prefix: str = "") -> Exists:
    """Whether an erasure in progress holds the participant, the Kindgi user or the thread
    (as a conversation) of the row reached through `prefix`."""
    # The hold's tenant is the query's own row's (the row reached through `prefix` has the
    # same, but may be the NULL side of an outer join, which Citus does not route through).
    return Exists(
        ErasureHold.objects.filter(tenant_id=OuterRef("tenant_id")).filter(
            Q(subject_kind=SubjectKind.PARTICIPANT, subject_id=OuterRef(f"{prefix}participant_id"))
            | Q(
                subject_kind=SubjectKind.USER,
                subject_id=Cast(OuterRef(f"{prefix}user_id"), CharField()),
            )
            | Q(subject_kind=SubjectKind.CONVERSATION, subject_id=OuterRef(f"{prefix}thread_id"))
        )
    )


def frozen(prefix: str = "") -> Q:
    """Whether the fact reached through `prefix` is frozen: an erasure of a person it is about
    finished and kept it under legal hold (`Fact.frozen_at`). A frozen fact is kept for the
    privacy officer's access export only: no reader reads it, whatever its readers, and no
    writer finds it to write (every write locks the fact through the reader guard)."""
    return Q(**{f"{prefix}frozen_at__isnull": False})


def held_among(subject_rows: Callable[[Callable[[str], OuterRef]], QuerySet]) -> Exists:
    """Whether an erasure in progress holds any of the rows `subject_rows(outer)` builds (rows
    with `kind` and `subject_id`, e.g. a revision's subjects), correlated to the row this
    condition is on through `outer("column")`."""
    if settings.CITUS:
        # One level at a time: Citus routes no sublink that reaches two levels out.
        return Exists(
            subject_rows(OuterRef).filter(
                Exists(
                    ErasureHold.objects.filter(
                        tenant_id=OuterRef("tenant_id"),
                        subject_kind=OuterRef("kind"),
                        subject_id=OuterRef("subject_id"),
                    )
                )
            )
        )
    # From the holds (none, or a few while an erasure runs) to the subjects: the other way
    # round probed every candidate's subjects, which under row security the planner chose
    # even with no hold at all.
    return Exists(
        ErasureHold.objects.filter(tenant_id=OuterRef("tenant_id")).filter(
            Exists(
                subject_rows(lambda column: OuterRef(OuterRef(column))).filter(
                    kind=OuterRef("subject_kind"), subject_id=OuterRef("subject_id")
                )
            )
        )
    )


def held_subjects(tenant_id: uuid.UUID, subjects: Iterable[Subject]) -> set[Subject]:
    """Those of `subjects` that an erasure in progress holds."""
    query = holds_query(tenant_id, subjects)
    if query is None:
        return set()
    rows = query.all()
    return {Subject(SubjectKind(row.subject_kind), row.subject_id) for row in rows}


def holds_query(tenant_id: uuid.UUID, subjects: Iterable[Subject]) -> Read | None:
    """The read `held_subjects` makes (None: no subjects, no read), for a caller that reads it
    ahead with others (`compiled.read_ahead`)."""
    wanted = tuple(sorted({(str(s.kind), s.id) for s in subjects}))
    if not wanted:
        return None
    return _holds_of(tenant_id, wanted)


# every write asks this: compiled once per number of subjects
@compiled()
def _holds_of(tenant_id: uuid.UUID, wanted: tuple[tuple[str, str], ...]) -> QuerySet:
    condition = Q()
    for kind, subject_id in wanted:
        condition |= Q(subject_kind=kind, subject_id=subject_id)
    return ErasureHold.objects.filter(condition, tenant_id=tenant_id).only(
        "subject_kind", "subject_id"
    )


def assert_not_held(tenant_id: uuid.UUID, subjects: Iterable[Subject]) -> None:
    """Raise `erasure-in-progress` (409) if any of `subjects` is held; call it inside the
    write's transaction, before anything is written."""
    held = held_subjects(tenant_id, subjects)
    if held:
        raise ErasureInProgress(details={"subjects": [str(s) for s in sorted(held)]})
