"""Who a caller is (`Principal`) and what it may read (`Readers`).

Readers are derived only from the credential, never from a request body:

- **tenant admin key**: `all=True`: every fact of its tenant (the tenant filter still applies).
- **Kindgi user key**: `project_ids` = the projects the user is a member of, `org_ids` = the
  orgs the user is a member of plus the orgs of those projects, `user_ids` = the user. No
  participants or threads: a person does not read an app's end users' private facts.
- **app key** (acting for all end users of its projects): `project_ids` and
  `on_behalf_of_project_ids` = the key's projects, `org_ids` = their orgs. It reads every
  participant's and thread's facts in those projects, and no Kindgi user's personal facts,
  conversations or runs (`kindmem.guards.recall_guard`).
- **run token**: the run's containers only: `project_ids` = its project, `org_ids` = that
  project's org, and, where the run names them, `user_ids` = its user, `participant_ids` = its
  participant, `thread_ids` = its thread. Never `on_behalf_of_project_ids`: a run acts in one
  conversation, for one person.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from compiled import Read, compiled

if TYPE_CHECKING:
    from kindmem.models import ApiKey, Run, User


@dataclass(frozen=True)
class Readers:
    """The seed's `MemoryReaders`: the containers a reader may read. A missing field grants none."""

    all: bool = False
    project_ids: frozenset[str] = frozenset()
    org_ids: frozenset[str] = frozenset()
    user_ids: frozenset[str] = frozenset()
    participant_ids: frozenset[str] = frozenset()
    thread_ids: frozenset[str] = frozenset()
    on_behalf_of_project_ids: frozenset[str] = frozenset()


# Kindgi users who answer subject access and erasure requests, and may weaken a fact's
# retention (facts/retention.py); the privacy app's pages and routes ask the same.
PRIVACY_OFFICER_GROUP = "privacy-officer"


def is_privacy_officer(user: Any) -> bool:
    """Whether `user` is in the privacy-officer group. Remembered on the user object, which
    lives for one request: a console page asks once per privacy page in its navigation."""
    if not user:
        return False
    known = getattr(user, "_kindmem_privacy_officer", None)
    if known is None:
        known = user.groups.filter(name=PRIVACY_OFFICER_GROUP).exists()
        user._kindmem_privacy_officer = known
    return known


class PrincipalKind(StrEnum):
    """Who a credential speaks for: an API key's kind (`kindmem.models.KeyKind`), or a run."""

    ADMIN = "admin"
    USER = "user"
    APP = "app"
    RUN = "run"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: an API key's principal, or a run acting through its token."""

    kind: PrincipalKind
    tenant_id: uuid.UUID
    api_key: ApiKey | None = None
    run: Run | None = None
    user: User | None = None

    @property
    def id(self) -> str:
        if self.run is not None:
            return f"run:{self.run.id}"
        assert self.api_key is not None
        return f"{self.kind}:{self.api_key.id}"


def _ids(values: object) -> frozenset[str]:
    return frozenset(str(v) for v in values)  # type: ignore[attr-defined]


def readers_for(principal: Principal) -> Readers:
    """The readers of a principal, from its credential alone (see the module docstring)."""
    if principal.kind == PrincipalKind.ADMIN:
        return Readers(all=True)
    if principal.kind == PrincipalKind.RUN:
        run = principal.run
        assert run is not None
        return Readers(
            project_ids=_ids([run.project_id]),
            org_ids=_ids([run.project.org_id]),
            user_ids=_ids([run.user_id] if run.user_id else []),
            participant_ids=_ids([run.participant_id] if run.participant_id else []),
            thread_ids=_ids([run.thread_id] if run.thread_id else []),
        )
    if principal.kind == PrincipalKind.USER:
        user = principal.user
        assert user is not None
        user_projects, user_orgs = readers_queries(principal)
        projects = [(p.id, p.org_id) for p in user_projects.all()]
        org_ids = {o.id for o in user_orgs.all()}
        return Readers(
            project_ids=_ids(p for p, _ in projects),
            org_ids=_ids(org_ids | {o for _, o in projects}),
            user_ids=_ids([user.id]),
        )
    if principal.kind == PrincipalKind.APP:
        [key_projects] = readers_queries(principal)
        projects = [(p.id, p.org_id) for p in key_projects.all()]
        project_ids = _ids(p for p, _ in projects)
        return Readers(
            project_ids=project_ids,
            org_ids=_ids(o for _, o in projects),
            on_behalf_of_project_ids=project_ids,
        )
    raise ValueError(f"unknown principal kind {principal.kind!r}")


def readers_queries(principal: Principal) -> tuple[Read, ...]:
    """The reads `readers_for` makes for `principal` (none for an admin key or a run), for a
    caller that reads them ahead with others (`compiled.read_ahead`)."""
    if principal.kind == PrincipalKind.USER:
        assert principal.user is not None
        return (
            _user_projects(principal.tenant_id, principal.user.pk),
            _user_orgs(principal.tenant_id, principal.user.pk),
        )
    if principal.kind == PrincipalKind.APP:
        assert principal.api_key is not None
        return (_key_projects(principal.tenant_id, principal.api_key.pk),)
    return ()


# A key's or a user's containers, read on every request of theirs, each the query its related
# manager makes.
@compiled()
def _user_projects(tenant_id: uuid.UUID, user_id: Any) -> Any:
    from kindmem.models import Project

    return Project.objects.filter(tenant_id=tenant_id, members=user_id).only("id", "org_id")


@compiled()
def _user_orgs(tenant_id: uuid.UUID, user_id: Any) -> Any:
    from kindmem.models import Org

    return Org.objects.filter(tenant_id=tenant_id, members=user_id).only("id")


@compiled()
def _key_projects(tenant_id: uuid.UUID, key_id: Any) -> Any:
    from kindmem.models import Project

    return Project.objects.filter(tenant_id=tenant_id, app_keys=key_id).only("id", "org_id")
