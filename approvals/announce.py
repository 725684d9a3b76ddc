"""`approval.pending` and `approval.decided`, announced to the tenant's webhooks in the
transaction that opened or decided the approval (webhooks/outbox.py), in the fact's chain: a
receiver hears that a value waits before it hears that it was decided (an approval's
`fact.changed` comes just before its `approval.decided`)."""

from __future__ import annotations

from approvals.models import Approval
from facts.announce import fact_about
from facts.models import Revision
from facts.revisions import subjects_of
from webhooks.models import EventKind
from webhooks.outbox import About, outbox_record


def approval_pending(*, approval: Approval, revision: Revision) -> None:
    outbox_record(
        tenant_id=approval.tenant_id,
        kind=EventKind.APPROVAL_PENDING,
        ordering_key=f"fact:{revision.fact_id}",
        data={
            "approval_id": str(approval.pk),
            "fact_id": str(revision.fact_id),
            "revision_id": str(revision.pk),
            "type": revision.fact.type,
            "agent_id": str(approval.agent_id) if approval.agent_id else None,
            "project_id": str(approval.project_id) if approval.project_id else None,
            "reasons": list(approval.reasons),
        },
        about=lambda: fact_about(revision.fact, revision, subjects_of(revision)),
    )


def approval_decided(*, approval: Approval) -> None:
    """`approval` as decided, its revision and fact loaded."""
    revision = approval.revision

    def about() -> About:
        told = fact_about(revision.fact, revision, subjects_of(revision))
        personal = {**told.personal, "decided_by": approval.decided_by, "note": approval.note}
        return About(personal=personal, subjects=told.subjects)

    outbox_record(
        tenant_id=approval.tenant_id,
        kind=EventKind.APPROVAL_DECIDED,
        ordering_key=f"fact:{revision.fact_id}",
        data={
            "approval_id": str(approval.pk),
            "fact_id": str(revision.fact_id),
            "revision_id": str(revision.pk),
            "verified_revision_id": (
                str(approval.verified_revision_id) if approval.verified_revision_id else None
            ),
            "type": revision.fact.type,
            "status": approval.status,
        },
        about=about,
    )
