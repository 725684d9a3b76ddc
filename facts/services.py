"""Writes to facts, the app's write API: create, supersede and patch, verify, delete, a run's
proposal, and a reviewer's approve and reject of a revision waiting for review. One
transaction each. Other apps write facts through this module alone.

Every write takes the caller's `Principal`: attribution, the tenant and what the writer may
touch come from the credential, never from the request body. A writer may only write into
containers it could read, checked with the same SQL guard reads use.

Each write lives in a module of its own: a new fact (`facts.create`), its next value
(`facts.supersede`), a person's decisions (`facts.decisions`); what they share, beside them:
results (`facts.writes`), the type's write policy and dedup (`facts.write_policy`), scopes
(`facts.scopes`), retention and cap-cull (`facts.retention`), attribution and hashing
(`facts.provenance`), the revision write core (`facts.revisions`), an agent's write rules
(`facts.agent_writes`) and its review (`facts.review`), links (`facts.links`).
"""

from __future__ import annotations

import uuid

from django.utils import timezone

from api.errors import RetentionViolation
from api.transactions import service_atomic
from facts.agent_writes import check_run_may_alter
from facts.authority import check_run_may_delete
from facts.create import fact_create
from facts.decisions import (
    can_verify,
    fact_lock,
    fact_propose,
    fact_verify,
    revision_approve,
    revision_reject,
)
from facts.models import InvalidationReason, Revision
from facts.provenance import attribution_of
from facts.retention import RetentionInput, invalidate, retention_forbids_delete
from facts.revisions import lock_current
from facts.scopes import SubjectInput
from facts.supersede import fact_patch, fact_supersede
from facts.write_policy import dedup_scope_of, type_content_schema
from facts.writes import Outcome, WriteResult
from kindmem.access import Principal

__all__ = [
    "Outcome",
    "RetentionInput",
    "SubjectInput",
    "WriteResult",
    "can_verify",
    "dedup_scope_of",
    "fact_create",
    "fact_delete",
    "fact_lock",
    "fact_patch",
    "fact_propose",
    "fact_supersede",
    "fact_verify",
    "revision_approve",
    "revision_reject",
    "type_content_schema",
]


@service_atomic
def fact_delete(*, principal: Principal, fact_id: uuid.UUID | str) -> Revision:
    """Invalidate the current revision (`deleted`): no read returns the fact afterwards, and
    its history stays. Refused with `retention-violation` while a legal hold, a future
    `keep_until` or an unelapsed `keep_days` forbids it, and with `forbidden` for an agent's run
    that may not alter the fact (`check_run_may_alter`) or delete an asserted one
    (`facts.authority.check_run_may_delete`)."""
    fact, current = lock_current(principal, fact_id)
    check_run_may_alter(principal, fact, current, deleting=True)
    check_run_may_delete(principal, current)
    now = timezone.now()
    reason = retention_forbids_delete(current, fact, now)
    if reason is not None:
        raise RetentionViolation(
            f"Retention forbids deleting this fact ({reason}).", details={"reason": reason}
        )
    invalidate(
        current, by=attribution_of(principal).label, reason=InvalidationReason.DELETED, now=now
    )
    return current
