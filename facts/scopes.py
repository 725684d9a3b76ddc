"""Where a fact lives and whom it is about: a requested scope checked against the tenant, the
default subjects, and the persons a write concerns (for holds)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from api.errors import InvalidFact
from compiled import Read, compiled
from facts.models import Fact, FactSubjectKind
from kindmem.models import Org, Project, User
from kindmem.subjects import Subject, persons_of

# A fact's scope columns, named as the API names its scope keys.
SCOPE_KEYS = ("org_id", "project_id", "user_id", "participant_id", "thread_id", "session_id")


@dataclass(frozen=True)
class SubjectInput:
    kind: str
    id: str


def resolve_scope(tenant_id: uuid.UUID, scope: Mapping[str, Any]) -> dict[str, str | None]:
    """Validate a requested scope against the tenant: unknown or foreign containers are an
    `invalid-fact` naming the field. An org left out is the project's org."""
    unknown = set(scope) - set(SCOPE_KEYS)
    if unknown:
        raise InvalidFact(
            "Unknown scope keys.", details={f"scope.{k}": ["Unknown key."] for k in sorted(unknown)}
        )
    resolved: dict[str, Any] = {
        k: (str(v) if v not in (None, "") else None) for k, v in scope.items()
    }
    found: dict[str, Any] = {}
    for key in _CONTAINERS:
        value = resolved.get(key)
        if value is None:
            continue
        try:
            ident = uuid.UUID(value)
        except ValueError:
            raise InvalidFact(details={f"scope.{key}": ["Not a UUID."]}) from None
        obj = _container(_CONTAINERS[key], tenant_id, ident).first()
        if obj is None:
            raise InvalidFact(details={f"scope.{key}": ["No such container in this tenant."]})
        found[key] = obj
    if resolved.get("participant_id") and not resolved.get("project_id"):
        raise InvalidFact(
            "A participant's fact names its project.",
            details={"scope.participant_id": ["Needs scope.project_id."]},
        )
    project = found.get("project_id")
    if project is not None:
        if "org_id" in found and found["org_id"].id != project.org_id:
            raise InvalidFact(details={"scope.org_id": ["Not the project's org."]})
        resolved["org_id"] = str(project.org_id)
    return {key: resolved.get(key) for key in SCOPE_KEYS}


_CONTAINERS: dict[str, type[Org] | type[Project] | type[User]] = {
    "org_id": Org,
    "project_id": Project,
    "user_id": User,
}


@compiled()
def _container(
    model: type[Org] | type[Project] | type[User], tenant_id: uuid.UUID, ident: uuid.UUID
) -> QuerySet:
    return model.objects.filter(tenant_id=tenant_id, id=ident).order_by("pk")[:1]


def scope_queries(tenant_id: uuid.UUID, scope: Mapping[str, Any]) -> list[Read]:
    """The reads `resolve_scope` makes for `scope` (its containers), for a write that reads
    them ahead with others; none for a value `resolve_scope` refuses before reading."""
    queries = []
    for key in _CONTAINERS:
        value = scope.get(key)
        if value in (None, ""):
            continue
        try:
            ident = uuid.UUID(str(value))
        except ValueError:
            continue
        queries.append(_container(_CONTAINERS[key], tenant_id, ident))
    return queries


def default_subjects(scope: Mapping[str, Any]) -> list[SubjectInput]:
    """Whom a fact is about when the writer does not say: its end user, else its user."""
    if scope.get("participant_id"):
        return [SubjectInput(kind=FactSubjectKind.PARTICIPANT, id=scope["participant_id"])]
    if scope.get("user_id"):
        return [SubjectInput(kind=FactSubjectKind.USER, id=str(scope["user_id"]))]
    return []


def persons_of_write(fact: Fact, subjects: Iterable[SubjectInput]) -> list[Subject]:
    """The persons a write of `fact` is about (`kindmem.subjects.persons_of`)."""
    return persons_of(
        participant_id=fact.participant_id,
        user_id=fact.user_id,
        thread_id=fact.thread_id,
        subjects=[Subject.parse(s.kind, s.id) for s in subjects],
    )


def scope_of(fact: Fact) -> dict[str, Any]:
    """A fact's scope, as its six keys."""
    return {k: getattr(fact, k) for k in SCOPE_KEYS}
