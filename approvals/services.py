"""Writes of the review queue: opening an approval for a revision that must wait (the `remember`
tool in `approvals.remember`, and an agent's write through the facts routes) and a reviewer's
decision on one approval."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from api.errors import Conflict, Forbidden, NotFound, ValidationFailed
from api.tracing import memory_operation
from approvals.announce import approval_decided, approval_pending
from approvals.models import Approval, ApprovalStatus
from audit.models import Outcome, Phase
from audit.services import Actor, AuditNote, audit_record
from facts.models import Revision
from facts.review import Finding
from facts.services import fact_lock, fact_verify, revision_approve, revision_reject
from kindmem.access import Principal, PrincipalKind, Readers

REVIEWER_GROUP = "reviewer"


class Decision:
    APPROVE = "approve"
    REJECT = "reject"
    CHOICES = (APPROVE, REJECT)


def approval_open(
    *,
    principal: Principal,
    revision: Revision,
    reasons: list[str],
    findings: list[Finding],
    now: datetime | None = None,
) -> Approval:
    """Open the approval a pending revision an agent's run wrote waits on: why it waits and
    the spans that fired, the agent, its version, project and run. In the caller's
    transaction, so the revision and its approval commit together."""
    run = principal.run
    if principal.kind != PrincipalKind.RUN or run is None:
        raise Forbidden("Only an agent run's writes wait for review.")
    approval = Approval.objects.create(
        tenant_id=principal.tenant_id,
        revision=revision,
        agent_id=run.agent_id,
        agent_version=run.agent_version,
        project_id=run.project_id,
        run=run,
        reasons=reasons,
        findings=[f.as_json() for f in findings],
        created_at=now or timezone.now(),
    )
    approval_pending(approval=approval, revision=revision)
    return approval


def is_reviewer(principal: Principal) -> bool:
    """A tenant admin key, or a Kindgi user in the `reviewer` group (or a superuser)."""
    if principal.kind == PrincipalKind.ADMIN:
        return True
    user = principal.user
    if principal.kind != PrincipalKind.USER or user is None or not user.is_active:
        return False
    return user.is_superuser or user.groups.filter(name=REVIEWER_GROUP).exists()


def reviewer_label(principal: Principal) -> str:
    if principal.kind == PrincipalKind.USER and principal.user is not None:
        return f"user:{principal.user.id}"
    assert principal.api_key is not None
    return f"{principal.kind}:{principal.api_key.id}"


def approval_get(*, principal: Principal, approval_id: uuid.UUID | str) -> Approval:
    """The tenant's approval, or `not-found` (another tenant's is indistinguishable, and so is
    one an erasure in progress holds: `ApprovalQuerySet.not_held`)."""
    try:
        ident = uuid.UUID(str(approval_id))
    except ValueError:
        raise NotFound("No such approval.") from None
    approval = (
        Approval.objects.of_tenant(principal.tenant_id)
        .not_held()
        .select_related("revision__fact", "agent", "project", "run", "decided_by_user")
        .filter(pk=ident)
        .first()
    )
    if approval is None:
        raise NotFound("No such approval.")
    return approval


def revision_audit_touch(note: AuditNote, revision: Revision) -> None:
    """Name in an audit event the revision that was remembered or decided, and its fact, which
    is what `GET /v1/audit?fact_id=` asks for: an event names the fact it touches, like every
    fact endpoint's. Recording it, rather than widening the filter to the fact's revision ids,
    keeps the lookup one probe of the GIN index on object_ids, needs no query of the facts
    tables from audit (which sits below facts), and still finds the events once an erasure or
    purge removed the revisions."""
    note.touch(
        ids=[revision.id, revision.fact_id],
        subjects=[(s.kind, s.subject_id) for s in revision.subjects.all()],
        targets=[(revision.fact.type, revision.fact.scope)],
    )
    if revision.fact.project_id:
        note.project_id = str(revision.fact.project_id)


def decision_audit_touch(note: AuditNote, approval: Approval) -> None:
    """What a decision's audit event says: the approval, its revision and fact (and the verified
    revision), whom it is about, and the decision."""
    note.touch(ids=[approval.id])
    revision_audit_touch(note, approval.revision)
    if approval.verified_revision_id:
        note.touch(ids=[approval.verified_revision_id])
    note.query_snapshot.update({"approval_id": str(approval.id), "decision": approval.status})


def _audit_actor(reviewer: Principal) -> Actor:
    # A console session decides as a user with no key (`console_principal`): the staff member.
    if reviewer.api_key is None and reviewer.run is None and reviewer.user is not None:
        return Actor.of_staff(reviewer.user, reviewer.tenant_id)
    return Actor.of_principal(reviewer)


@memory_operation(
    "review_decision",
    before=lambda **kw: {
        "gen_ai.operation.name": "update_memory",
        "kindmem.memory.kind": "approval",
        "kindmem.review.decision": kw.get("decision"),
        "kindmem.review.verify": bool(kw.get("verify", False)),
    },
)
@transaction.atomic
def approval_decide(
    *,
    approval: Approval,
    decision: str,
    reviewer: Principal,
    note: str = "",
    verify: bool = False,
    audit: AuditNote | None = None,
    endpoint: str = "POST console approval-decide",
) -> Approval:
    """Decide a pending approval, once. The claim is a conditional UPDATE on `status =
    'pending'`: 0 rows changed means someone decided first (`conflict`, 409).

    Every decision is an audit event (phase write) in the decision's transaction, naming the
    reviewer, the approval and the decision (`decision_audit_touch`). An API call passes its
    request's note (`audit`: `AuditedView` records that one event per call); without one (the
    console's buttons, keys and bulk actions) the decision records its own, at `endpoint`, as
    the staff member ("staff:<user id>").

    approve: the revision becomes readable as it is (trust `unverified`), replacing the fact's
    approved value if it had one (`superseded`). approve + verify: also a new revision `trust:
    verified` by the reviewer (`fact_verify`), lifting the unverified window. reject: the
    revision is invalidated (`deleted`, by the reviewer) and never readable; an approved value
    it waited beside stays the fact.

    Approving is a compare-and-swap (`facts.stale`): when the fact moved on since the value was
    computed (edited, patched, verified, deleted, erased), `revision_approve` answers
    `stale-approval` (409) and the whole decision rolls back, the claim included. The approval
    stays `pending`, by choice: closing it would be a write in a call that must change nothing,
    and the reviewer still has a decision to take. The console shows it marked stale, with the
    fact's value now beside it and why approving is refused, and rejecting it stays allowed.

    Locks: the fact's row first (`fact_lock`), then the approval's (the claim), the order every
    writer of the fact takes them in. Two decisions on one approval queue on its row (the
    second finds it decided: `conflict`); two approvals of values of one fact, or an approval
    and an edit, queue on the fact's row, so the second sees what the first wrote."""
    if not is_reviewer(reviewer):
        raise Forbidden("Only a reviewer or a tenant admin decides pending memories.")
    if decision not in Decision.CHOICES:
        raise ValidationFailed(details={"decision": [f"One of {', '.join(Decision.CHOICES)}."]})
    if decision == Decision.REJECT and verify:
        raise ValidationFailed(details={"verify": ["A rejected memory cannot be verified."]})
    if approval.tenant_id != reviewer.tenant_id:
        raise NotFound("No such approval.")
    now = timezone.now()
    by = reviewer_label(reviewer)
    status = {
        (Decision.APPROVE, False): ApprovalStatus.APPROVED,
        (Decision.APPROVE, True): ApprovalStatus.VERIFIED,
        (Decision.REJECT, False): ApprovalStatus.REJECTED,
    }[(decision, verify)]
    fact_lock(tenant_id=reviewer.tenant_id, fact_id=approval.fact_id)
    claimed = Approval.objects.filter(
        pk=approval.pk, tenant_id=reviewer.tenant_id, status=ApprovalStatus.PENDING
    ).update(
        status=status,
        decided_at=now,
        decided_by=by,
        decided_by_user=reviewer.user if reviewer.kind == PrincipalKind.USER else None,
        note=note,
    )
    if claimed != 1:
        current = (
            Approval.objects.filter(tenant_id=reviewer.tenant_id, pk=approval.pk)
            .values_list("status", flat=True)
            .first()
        )
        raise Conflict(f"This memory was already decided ({current}).", details={"status": current})
    if decision == Decision.REJECT:
        revision_reject(tenant_id=reviewer.tenant_id, revision_id=approval.revision_id, by=by)
    else:
        revision = revision_approve(
            tenant_id=reviewer.tenant_id, revision_id=approval.revision_id, by=by
        )
        if verify:
            if revision.expires_at is not None and revision.expires_at <= now:
                raise Conflict("This memory expired before it was verified; approve it instead.")
            result = fact_verify(
                principal=reviewer,
                fact_id=revision.fact_id,
                expected_version=revision.version,
                # the queue is tenant-wide: a reviewer decides facts their own key cannot list
                readers=Readers(all=True),
            )
            Approval.objects.filter(tenant_id=reviewer.tenant_id, pk=approval.pk).update(
                verified_revision=result.revision
            )
    decided = (
        Approval.objects.select_related("revision__fact", "agent", "project", "run")
        .prefetch_related("revision__subjects")
        .get(tenant_id=reviewer.tenant_id, pk=approval.pk)
    )
    approval_decided(approval=decided)
    event = audit if audit is not None else AuditNote(phase=Phase.WRITE, kind="fact")
    decision_audit_touch(event, decided)
    if audit is None:
        audit_record(
            principal=_audit_actor(reviewer),
            note=event,
            outcome=Outcome.SUCCESS,
            endpoint=endpoint,
        )
    return decided


def console_principal(user: object, tenant_id: uuid.UUID) -> Principal:
    """The principal a console session decides as: the staff user, in the approval's tenant
    (the console has already limited the user to their own tenant's approvals)."""
    return Principal(kind=PrincipalKind.USER, tenant_id=tenant_id, user=user)  # type: ignore[arg-type]
