"""Whom data is about: the one `Subject` value (a kind and an id) that erasures, holds and
access exports share, and `persons_of`, the persons a write or a row is about.

A subject is validated once, where it enters (an erasure or access request, a hold check):
a Kindgi user is named by its UUID in canonical form, every id is a non-empty string of at
most 200 characters without NUL. Everything downstream may then compare strings.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from api.errors import ValidationFailed
from kindmem.models import SubjectKind

MAX_ID_LENGTH = 200  # the hold's and the scope columns' width


@dataclass(frozen=True, order=True)
class Subject:
    kind: SubjectKind
    id: str

    @classmethod
    def parse(cls, kind: str, id: object) -> Subject:
        """A validated subject, or `validation-error` (400) saying what is wrong."""
        if kind not in SubjectKind.values:
            raise ValidationFailed(
                f"Unknown subject kind {kind!r}.", details={"kind": sorted(SubjectKind.values)}
            )
        if not isinstance(id, str) or not id or len(id) > MAX_ID_LENGTH or "\x00" in id:
            raise ValidationFailed(
                f"A subject id is a non-empty string of at most {MAX_ID_LENGTH} characters.",
                details={"id": ["Invalid subject id."]},
            )
        if kind == SubjectKind.USER:
            try:
                canonical = str(uuid.UUID(id))
            except ValueError:
                raise ValidationFailed(
                    "A Kindgi user is named by its UUID.", details={"id": ["Not a UUID."]}
                ) from None
            id = canonical
        return cls(SubjectKind(kind), id)

    @classmethod
    def user(cls, user_id: uuid.UUID | str) -> Subject:
        return cls.parse(SubjectKind.USER, str(user_id))

    @property
    def user_uuid(self) -> uuid.UUID | None:
        """The Kindgi user's id as a UUID (None for any other kind)."""
        return uuid.UUID(self.id) if self.kind == SubjectKind.USER else None

    @property
    def spellings(self) -> list[str]:
        """Every form in which this subject's id is written into other rows: the bare id and
        the prefixed `kind:id` (provenance, audit subjects and principals)."""
        return [self.id, str(self)]

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.id}"


def persons_of(
    *,
    participant_id: str | None = None,
    user_id: uuid.UUID | str | None = None,
    thread_id: str | None = None,
    subjects: Iterable[Subject] = (),
) -> list[Subject]:
    """The persons (and the conversation) a write or a row is about: the named subjects, its
    participant, its Kindgi user and its thread. An erasure holding any of them stops it."""
    persons = set(subjects)
    if participant_id:
        persons.add(Subject(SubjectKind.PARTICIPANT, participant_id))
    if user_id:
        persons.add(Subject(SubjectKind.USER, str(user_id)))
    if thread_id:
        persons.add(Subject(SubjectKind.CONVERSATION, thread_id))
    return sorted(persons)
