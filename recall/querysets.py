"""Reads of conversations and messages: the recall guard in SQL, holds, selections."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Exists, OuterRef, Q, TextField
from django.db.models.functions import Cast

from kindmem.access import Readers
from kindmem.models import ErasureHold, SubjectKind

if TYPE_CHECKING:
    from recall.search import Selection

NOTHING = Q(pk__in=[])  # a condition no row meets (Django compiles it to an empty result)


def _canonical_uuids(values: Iterable[str]) -> list[uuid.UUID]:
    """The reader ids that can equal a UUID column. The Python guard compares strings, so only
    the canonical spelling (str(uuid)) may match; anything else matches no row, as there."""
    out = []
    for value in values:
        try:
            parsed = uuid.UUID(value)
        except (ValueError, TypeError, AttributeError):
            continue
        if str(parsed) == value:
            out.append(parsed)
    return out


def recall_guard(readers: Readers, prefix: str = "") -> Q:
    """`isRecallReadableBy` as a condition on a conversation (fields under `prefix`).

    Mirrors `recall.access.is_recall_readable_by`; a hypothesis test holds them equal. The
    `__in` tests are false for NULL columns, which is the seed's "`id !== undefined`".
    """
    if readers.all:
        return Q()

    def c(**lookup: Any) -> Q:
        return Q(**{f"{prefix}{name}": value for name, value in lookup.items()})

    on_behalf = _canonical_uuids(readers.on_behalf_of_project_ids)
    projects = _canonical_uuids(readers.project_ids | readers.on_behalf_of_project_ids)
    project_ok = c(project_id__isnull=True)
    if projects:
        project_ok |= c(project_id__in=projects)

    # The seed's `onBehalf` passes both clauses at once (its projects are among the readers'),
    # so it is written as its own branch: `project IN on_behalf OR (project ok AND person)`.
    # Equivalent, and the planner estimates it far better than the nested form.
    person: list[Q] = []
    if readers.participant_ids:
        person.append(c(participant_id__in=sorted(readers.participant_ids)))
    users = _canonical_uuids(readers.user_ids)
    if users:
        person.append(c(participant_id__isnull=True, user_id__in=users))
    if readers.thread_ids:
        person.append(c(thread_id__in=sorted(readers.thread_ids)))
    branches = [project_ok & reduce(or_, person)] if person else []
    if on_behalf:
        branches.insert(0, c(project_id__in=on_behalf))
    if not branches:
        return NOTHING
    return reduce(or_, branches)


def held_condition(prefix: str = "") -> Exists:
    """An erasure in progress holds the conversation's person or the conversation itself."""
    holds = ErasureHold.objects.filter(tenant_id=OuterRef(f"{prefix}tenant_id")).filter(
        Q(
            subject_kind=SubjectKind.PARTICIPANT,
            subject_id=OuterRef(f"{prefix}participant_id"),
        )
        | Q(
            subject_kind=SubjectKind.USER,
            subject_id=Cast(OuterRef(f"{prefix}user_id"), output_field=TextField()),
        )
        | Q(subject_kind=SubjectKind.CONVERSATION, subject_id=OuterRef(f"{prefix}thread_id"))
    )
    return Exists(holds)


class ConversationQuerySet(models.QuerySet):
    def of_tenant(self, tenant_id: uuid.UUID) -> ConversationQuerySet:
        return self.filter(tenant_id=tenant_id)

    def recall_readable_by(self, readers: Readers) -> ConversationQuerySet:
        return self.filter(recall_guard(readers))

    def not_held(self) -> ConversationQuerySet:
        return self.filter(~held_condition())


class MessageQuerySet(models.QuerySet):
    def of_tenant(self, tenant_id: uuid.UUID) -> MessageQuerySet:
        return self.filter(tenant_id=tenant_id)

    def recall_readable_by(self, readers: Readers) -> MessageQuerySet:
        """Messages of conversations `readers` may recall (the guard, in the query)."""
        return self.filter(recall_guard(readers, prefix="conversation__"))

    def not_held(self) -> MessageQuerySet:
        """Messages of conversations no erasure in progress holds."""
        return self.filter(~held_condition(prefix="conversation__"))

    def of_roles(self, roles: Iterable[str]) -> MessageQuerySet:
        """Only these roles; tool messages are never recalled, whatever is asked."""
        return self.filter(role__in=[r for r in roles if r != "tool"])

    def selected(self, selections: list[Selection]) -> MessageQuerySet:
        """Messages matching any of `selections` (each: one agent, every other field given)."""
        if not selections:
            return self.none()
        return self.filter(reduce(or_, (s.condition() for s in selections)))
