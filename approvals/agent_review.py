"""Remember's review of an agent's write through the facts routes (create, supersede, propose),
the reviewer facts asks (`facts.review`, named by settings.AGENT_WRITE_REVIEW).

The same rules as the `remember` tool's (`approvals.remember`): `wide-scope` for a fact beyond
one person or conversation; `instruction-like` and `hidden-characters` from the content as a
reviewer reads it, its slot key and its tags. Nothing for any other writer: a person or an app
asserts what it writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from approvals import gate
from approvals.services import approval_open
from facts.agent_writes import is_wide
from facts.models import Fact, Revision
from facts.review import ReviewNeeded
from kindmem.access import Principal


class AgentWriteReviewer:
    def needed(
        self,
        principal: Principal,
        fact: Fact,
        content: Any,
        *,
        beside: Sequence[Any] = (),
        identifiers: Sequence[str | None] = (),
    ) -> ReviewNeeded:
        return gate.write_gate(
            principal=principal,
            content=content,
            labels=[fact.key or "", *fact.tags, *beside],
            identifiers=identifiers,
            wide_scope=is_wide(fact),
        )

    def open(self, *, principal: Principal, revision: Revision, needed: ReviewNeeded) -> uuid.UUID:
        approval = approval_open(
            principal=principal,
            revision=revision,
            reasons=needed.reasons,
            findings=needed.findings,
        )
        return approval.id


reviewer = AgentWriteReviewer()
