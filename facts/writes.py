"""What every write of a fact's value shares: its outcome and result, the check of a validity
window, and the queueing of an agent's write that waits for a person (`facts.review`)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from api.errors import (
    InvalidFact,
)
from facts.models import (
    Revision,
)
from facts.review import ReviewNeeded, agent_write_review
from kindmem.access import Principal


class Outcome(StrEnum):
    CREATED = "created"
    SUPERSEDED = "superseded"
    VERIFIED = "verified"
    DELETED = "deleted"
    UNCHANGED = "unchanged"  # a content-hash dedup: nothing written


@dataclass(frozen=True)
class WriteResult:
    revision: Revision
    outcome: Outcome
    # an agent's write that waits for a person (`review: pending`): why, and its approval
    reasons: list[str] = field(default_factory=list)
    approval_id: uuid.UUID | None = None
    # the revision as stored (`facts.revisions.stored_revision`), where the write read it in
    # its own round trip; else None, and its response reads it
    stored: Revision | None = None


def check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    if valid_from and valid_until and valid_from >= valid_until:
        raise InvalidFact(details={"valid_until": ["Must be after valid_from."]})


def queued_for_review(
    principal: Principal, result: WriteResult, needed: ReviewNeeded
) -> WriteResult:
    """The write's result, its revision queued for review when it must wait."""
    if not needed:
        return result
    approval_id = agent_write_review().open(
        principal=principal, revision=result.revision, needed=needed
    )
    return dataclasses.replace(result, reasons=needed.reasons, approval_id=approval_id)
