"""Reads of conversations and messages: the recall guard and the holds (both from `kindmem`),
selections."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING

from django.db import models

from kindmem.access import Readers
from kindmem.guards import recall_guard
from kindmem.holds import held_condition
from kindmem.models import SubjectKind
from kindmem.subjects import Subject

if TYPE_CHECKING:
    from recall.search import Selection


class ConversationQuerySet(models.QuerySet):
    def of_tenant(self, tenant_id: uuid.UUID) -> ConversationQuerySet:
        return self.filter(tenant_id=tenant_id)

    def recall_readable_by(self, readers: Readers) -> ConversationQuerySet:
        return self.filter(recall_guard(readers))

    def about(self, subject: Subject) -> ConversationQuerySet:
        """The subject's conversations: its participant's, its Kindgi user's, the conversation
        itself; an external subject has none."""
        if subject.kind == SubjectKind.PARTICIPANT:
            return self.filter(participant_id=subject.id)
        if subject.kind == SubjectKind.USER:
            return self.filter(user_id=subject.user_uuid)
        if subject.kind == SubjectKind.CONVERSATION:
            return self.filter(thread_id=subject.id)
        return self.none()

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
