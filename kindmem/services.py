"""Writes to tenancy and credentials: one function per action."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from api.bearer import API_KEY_MARKER, RUN_TOKEN_MARKER
from api.errors import Forbidden, NotFound, ValidationFailed
from kindmem.access import Principal, PrincipalKind
from kindmem.credentials import new_token
from kindmem.holds import assert_not_held
from kindmem.models import (
    Agent,
    ApiKey,
    ErasureHold,
    KeyKind,
    Project,
    Run,
    Tenant,
    User,
    WorkerHeartbeat,
)
from kindmem.subjects import persons_of
from kindmem.threads import thread_claim, thread_person


@transaction.atomic
def api_key_create(
    *,
    tenant: Tenant,
    kind: str,
    name: str,
    user: User | None = None,
    projects: Iterable[Project] = (),
) -> tuple[ApiKey, str]:
    """Create a key and return it with its plaintext, which is never stored or shown again."""
    projects = list(projects)
    api_key_check(tenant=tenant, kind=kind, user=user, projects=projects)
    minted = new_token(API_KEY_MARKER)
    key = ApiKey.objects.create(
        tenant=tenant,
        kind=kind,
        name=name,
        user=user,
        prefix=minted.prefix,
        key_hash=minted.hash,
    )
    if projects:
        key.projects.set(projects)
    return key, minted.token


def api_key_check(
    *, tenant: Tenant, kind: str, user: User | None, projects: Iterable[Project]
) -> None:
    """Raise `ValidationFailed` unless a key of this kind may be made so (the console's add
    form asks first, to answer a form error rather than fail the save)."""
    if kind not in KeyKind.values:
        raise ValidationFailed(f"Unknown key kind {kind!r}.")
    if kind == PrincipalKind.USER and (user is None or user.tenant_id != tenant.id):
        raise ValidationFailed("A user key names a user of its tenant.")
    projects = list(projects)
    if kind == PrincipalKind.APP and not projects:
        raise ValidationFailed("An app key acts for the end users of at least one project.")
    if any(p.tenant_id != tenant.id for p in projects):
        raise ValidationFailed("An app key's projects belong to its tenant.")


def api_key_revoke(*, key: ApiKey) -> bool:
    """Revoke a key (and the runs it minted stop authenticating). False if it already was."""
    changed = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    key.refresh_from_db(fields=["revoked_at"])
    return changed == 1


def acting_check(
    *,
    principal: Principal,
    project_id: uuid.UUID | str | None = None,
    participant_id: str | None = None,
    user_id: uuid.UUID | str | None = None,
    thread_id: str | None = None,
) -> None:
    """`forbidden` unless `principal` stands for everything named (docs/architecture.md,
    rule 1): an app for its projects and their end users (participants), never a Kindgi
    user; a Kindgi user for itself in projects it is a member of, never an end user; a run for
    its own project, person and thread. The one rule for minting a run (`run_mint`), a
    conversation's first write (`recall.services`) and an extraction's run (`acting_for`).
    Only what is named is checked; no id is looked up before it is refused, so a refusal says
    nothing about whether a person exists. Whose a thread is, is `kindmem.threads`' rule."""
    if principal.kind == PrincipalKind.APP:
        assert principal.api_key is not None
        if project_id is not None and not _key_acts_in(principal.api_key, project_id):
            raise Forbidden("This app key does not act for that project.")
        if user_id is not None:
            raise Forbidden(
                "An app key acts for its projects' end users (participant_id), never for a "
                "Kindgi user: a person's runs and conversations are that person's own key's."
            )
    elif principal.kind == PrincipalKind.USER:
        user = principal.user
        assert user is not None
        if user_id is not None and str(user_id) != str(user.pk):
            raise Forbidden("A user credential mints runs for itself only.")
        if participant_id is not None:
            raise Forbidden(
                "A user credential mints runs for itself only, never for an app's end user "
                "(participant_id)."
            )
        if project_id is not None and not user.projects.filter(pk=project_id).exists():
            raise Forbidden("You are not a member of that project.")
    elif principal.kind == PrincipalKind.RUN:
        run = principal.run
        assert run is not None
        named = [
            (project_id, run.project_id),
            (participant_id, run.participant_id),
            (user_id, run.user_id),
            (thread_id, run.thread_id),
        ]
        if any(given is not None and str(given) != str(own) for given, own in named):
            raise Forbidden("A run acts in its own project, for its own person and thread only.")
    else:
        raise Forbidden("Only an app, a Kindgi user or a run acts for people.")


def _key_acts_in(key: ApiKey, project_id: uuid.UUID | str) -> bool:
    try:
        return key.projects.filter(pk=uuid.UUID(str(project_id))).exists()
    except ValueError:
        return False


@dataclass(frozen=True)
class Acting:
    """The containers a run is made for: a project and, where named, a person and a thread."""

    project_id: uuid.UUID
    participant_id: str | None = None
    user_id: uuid.UUID | None = None
    thread_id: str | None = None

    @classmethod
    def of_run(cls, run: Run) -> Acting:
        return cls(run.project_id, run.participant_id, run.user_id, run.thread_id)


def acting_for(
    *,
    principal: Principal,
    project_id: uuid.UUID,
    participant_id: str | None,
    user_id: uuid.UUID | None,
    thread_id: str | None,
) -> Acting:
    """Of these containers (a conversation's), those `principal` stands for (`acting_check`):
    a run made for them is one `principal` could have minted, so it reads and writes nothing
    `principal` may not. A person it does not stand for is left out, and so is the thread when
    it is that person's (a thread belongs to its project and person: `kindmem.threads`).
    `forbidden` when it does not act in the project at all."""
    acting_check(principal=principal, project_id=project_id)

    def stands_for(**named: Any) -> bool:
        try:
            acting_check(principal=principal, **named)
        except Forbidden:
            return False
        return True

    participant = (
        participant_id if participant_id and stands_for(participant_id=participant_id) else None
    )
    user = user_id if user_id and stands_for(user_id=user_id) else None
    same_person = thread_person(participant, user) == thread_person(participant_id, user_id)
    thread = thread_id if thread_id and same_person and stands_for(thread_id=thread_id) else None
    return Acting(project_id, participant, user, thread)


@transaction.atomic
def run_mint(
    *,
    principal: Principal,
    agent_id: str,
    project_id: str,
    participant_id: str | None = None,
    user_id: str | None = None,
    thread_id: str | None = None,
    session_id: str | None = None,
) -> tuple[Run, str]:
    """Mint a run for an app or a Kindgi user, and its short-lived token.

    A run names only people and threads its minter already stands for (docs/credentials.md):
    an app mints runs in its own projects for any of their end users (participants), never
    for a Kindgi user (an app reads no person's personal facts); a Kindgi user mints runs in
    projects it is a member of, for itself only, never for an end user. A thread is the
    minter's only if it is new or belongs to the run's project and person (`kindmem.threads`).
    Nothing is minted for a person or conversation whose erasure is in progress.
    """
    if principal.kind not in {PrincipalKind.APP, PrincipalKind.USER}:
        raise Forbidden("Only an app or a Kindgi user credential mints runs.")
    tenant_id = principal.tenant_id
    agent = Agent.objects.filter(tenant_id=tenant_id, agent_id=agent_id).first()
    if agent is None:
        raise NotFound(f"No agent {agent_id!r} in this tenant.")
    project = Project.objects.filter(tenant_id=tenant_id, pk=project_id).first()
    if project is None:
        raise NotFound("No such project in this tenant.")
    acting_check(
        principal=principal, project_id=project.pk, participant_id=participant_id, user_id=user_id
    )
    user = principal.user if principal.kind == PrincipalKind.USER else None
    assert_not_held(
        tenant_id,
        persons_of(
            participant_id=participant_id, user_id=user.pk if user else None, thread_id=thread_id
        ),
    )
    if thread_id is not None:
        thread_claim(
            tenant_id=tenant_id,
            thread_id=thread_id,
            project_id=project.pk,
            participant_id=participant_id,
            user_id=user.pk if user else None,
        )
    minted = new_token(RUN_TOKEN_MARKER)
    now = timezone.now()
    run = Run.objects.create(
        tenant_id=tenant_id,
        agent=agent,
        agent_version=agent.version,
        project=project,
        participant_id=participant_id,
        user=user,
        thread_id=thread_id,
        session_id=session_id,
        minted_by=principal.api_key,
        token_prefix=minted.prefix,
        token_hash=minted.hash,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.RUN_TOKEN_TTL_SECONDS),
    )
    return run, minted.token


def run_start_internal(
    *,
    tenant_id: uuid.UUID,
    agent: Agent,
    project_id: uuid.UUID,
    participant_id: str | None,
    user_id: uuid.UUID | None,
    thread_id: str | None,
) -> Run:
    """A run kindmem starts for work it does as an agent (a conversation's extraction), in the
    containers of something the caller may already read: with no token (the one made for
    its hash is thrown away, no key minted it, and it has expired when made), so it never
    authenticates. Its rows are written as that agent, attributed to this run."""
    minted = new_token(RUN_TOKEN_MARKER)  # its token is never shown: only the hash is kept
    now = timezone.now()
    return Run.objects.create(
        tenant_id=tenant_id,
        agent=agent,
        agent_version=agent.version,
        project_id=project_id,
        participant_id=participant_id,
        user_id=user_id,
        thread_id=thread_id,
        minted_by=None,
        token_prefix=minted.prefix,
        token_hash=minted.hash,
        created_at=now,
        expires_at=now,
    )


def hold_place(
    *, tenant_id: uuid.UUID, subject_kind: str, subject_id: str, erasure_id: uuid.UUID
) -> ErasureHold:
    """From now on nothing new lands for the person (or conversation) and their data reads as
    nothing, until `holds_release` for the erasure (kindmem.holds checks it everywhere)."""
    return ErasureHold.objects.create(
        tenant_id=tenant_id, subject_kind=subject_kind, subject_id=subject_id, erasure_id=erasure_id
    )


def holds_release(*, erasure_id: uuid.UUID) -> None:
    """The holds an erasure placed, lifted (it completed, or was cancelled)."""
    ErasureHold.objects.filter(erasure_id=erasure_id).delete()


def runs_forget_person(*, run_ids: Iterable[uuid.UUID], subject_kind: str) -> None:
    """Take an erased person's id off their runs (the run log's erasure step, once the runs'
    payloads are cleared), so the runs no longer name them."""
    column = {"participant": "participant_id", "user": "user", "conversation": "thread_id"}
    Run.objects.filter(pk__in=list(run_ids)).update(**{column[subject_kind]: None})


def heartbeat_checks_record(*, hostname: str, checks: dict[str, Any]) -> None:
    """Keep what a worker's probe of the outside world found with its heartbeat (a probe is a
    task the worker ran: it is a heartbeat too)."""
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"seen_at": timezone.now(), "checks": checks}
    )
