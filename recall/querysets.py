"""Reads of conversations and messages: the recall guard and the holds (both from `kindmem`),
selections."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.db import models
from django.db.models import Q

from kindmem.access import Readers
from kindmem.guards import recall_guard
from kindmem.holds import held_condition
from kindmem.models import SubjectKind
from kindmem.subjects import Subject


@dataclass(frozen=True)
class Selection:
    """The seed's `RecallSelection`: one agent's conversations, narrowed by every field given."""

    agent_id: str
    conversation_id: str | None = None
    before_sequence: int | None = None
    exclude_conversation_id: str | None = None
    participant_id: str | None = None
    user_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    segments_prefix: tuple[str, ...] = ()

    def condition(self) -> Q:
        condition = Q(conversation__agent__agent_id=self.agent_id)
        if self.conversation_id is not None:
            condition &= Q(conversation__thread_id=self.conversation_id)
        if self.before_sequence is not None:
            condition &= Q(sequence__lt=self.before_sequence)
        if self.exclude_conversation_id is not None:
            condition &= ~Q(conversation__thread_id=self.exclude_conversation_id)
        if self.participant_id is not None:
            condition &= Q(conversation__participant_id=self.participant_id)
        if self.user_id is not None:
            condition &= Q(conversation__user_id=self.user_id)
        if self.project_id is not None:
            condition &= Q(conversation__project_id=self.project_id)
        if self.segments_prefix:
            # segments[1:prefix_length] = prefix (an array slice compares element by element)
            prefix_length = len(self.segments_prefix)
            condition &= Q(
                **{f"conversation__segments__0_{prefix_length}": list(self.segments_prefix)}
            )
        return condition


class ConversationQuerySet(models.QuerySet):
    def of_tenant(self, tenant_id: uuid.UUID) -> ConversationQuerySet:
        return self.filter(tenant_id=tenant_id)

    def recall_readable_by(
        self, readers: Readers, *, narrowed_to: Readers | None = None
    ) -> ConversationQuerySet:
        """Conversations `readers` (and `narrowed_to`, where given) may recall."""
        return self.filter(recall_guard(readers, narrowed_to=narrowed_to))

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
    def of_tenant(self, tenant_id: uuid.UUID | str) -> MessageQuerySet:
        return self.filter(tenant_id=tenant_id)

    def recall_readable_by(
        self, readers: Readers, *, narrowed_to: Readers | None = None
    ) -> MessageQuerySet:
        """Messages of conversations `readers` (and `narrowed_to`, where given) may recall
        (the guard, in the query)."""
        return self.filter(recall_guard(readers, prefix="conversation__", narrowed_to=narrowed_to))

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
