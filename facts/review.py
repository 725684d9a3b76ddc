"""When an agent's write through the facts routes waits for a person: the review reasons facts
stores, and the reviewer it asks.

The rules and the queue are remember's review, the approvals app's (`approvals.agent_review`);
facts may not import approvals (imports run one way: facts <- approvals). So the reviewer is
named by a setting, `AGENT_WRITE_REVIEW`, as Django names its user model and DRF its
authenticators: facts asks it, inside the write's transaction, whether the write must wait and
then to queue the pending revision, which commits with its approval or not at all. With no
reviewer configured every write through facts' services fails loudly (DESIGN rule 7): an
agent's write that must wait never lands unseen.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from facts.models import Fact, Revision
    from kindmem.access import Principal

WIDE_SCOPE = "wide-scope"
INSTRUCTION_LIKE = "instruction-like"
HIDDEN_CHARACTERS = "hidden-characters"
# A new value for a slot whose current value a person verified: a run never alters a verified
# fact on its own, so the new value waits for a reviewer (the verified one stays meanwhile).
VERIFIED_SLOT = "verified-slot"
# A proposed next value of an existing memory, from a conversation's extraction: it would
# replace what every reader reads, so a person decides (extraction never supersedes silently).
CONTRADICTION = "contradiction"
# A run's new value of a fact a person, an app or staff asserted (not an agent's memory): a run
# may propose a change of what someone else asserted, never make it on its own (facts.authority).
ASSERTED_OVERWRITE = "asserted-overwrite"
# An extracted memory the tenant sends to review whatever its type's rules say (its setting).
EXTRACTED = "extracted"
# In the order a reviewer reads them (the seed's first).
REASONS = (
    WIDE_SCOPE,
    INSTRUCTION_LIKE,
    HIDDEN_CHARACTERS,
    VERIFIED_SLOT,
    ASSERTED_OVERWRITE,
    CONTRADICTION,
    EXTRACTED,
)


@dataclass(frozen=True)
class Finding:
    """What a detector found in the text a reviewer reads: the reason it fires, the rule, and
    the span, so that the console can mark the words."""

    reason: str
    rule: str
    start: int
    end: int
    match: str

    def as_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "rule": self.rule,
            "start": self.start,
            "end": self.end,
            "match": self.match,
        }


@dataclass(frozen=True)
class ReviewNeeded:
    """Why a write waits for a person (empty: it does not), and what the detectors found."""

    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasons)


class AgentWriteReview(Protocol):
    def needed(
        self,
        principal: Principal,
        fact: Fact,
        content: Any,
        *,
        beside: Sequence[Any] = (),
        identifiers: Sequence[str | None] = (),
    ) -> ReviewNeeded:
        """Whether `principal`'s write of `content` into `fact` waits for a person; `beside`
        is what else the write says that readers are shown (its source), read as the content
        is, and `identifiers` its run step's and tool call's ids."""
        ...

    def open(self, *, principal: Principal, revision: Revision, needed: ReviewNeeded) -> uuid.UUID:
        """Queue the pending `revision` for a reviewer; the approval's id."""
        ...


def agent_write_review() -> AgentWriteReview:
    """The configured reviewer (settings.AGENT_WRITE_REVIEW, a dotted path to an object)."""
    path = getattr(settings, "AGENT_WRITE_REVIEW", "")
    if not path:
        raise ImproperlyConfigured(
            "AGENT_WRITE_REVIEW names no reviewer: an agent's write that must wait for review "
            "cannot be accepted."
        )
    reviewer: AgentWriteReview = import_string(path)
    return reviewer
