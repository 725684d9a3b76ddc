"""Remember's review of an agent's write through the facts routes (create, supersede, propose),
the reviewer facts asks (`facts.review`, named by settings.AGENT_WRITE_REVIEW).

The same rules as the `remember` tool's (`approvals.remember`): `wide-scope` for a fact beyond
one person or conversation; `instruction-like` and `hidden-characters` from the content as a
reviewer reads it, its slot key and its tags. Nothing for any other writer: a person or an app
asserts what it writes.
"""

from __future__ import annotations

import uuid
from typing import Any

from approvals.review_reasons import detect, reasons_of, review_text
from approvals.services import approval_open
from facts.agent_writes import is_wide
from facts.models import Fact, Revision
from facts.review import ReviewNeeded
from kindmem.access import Principal, PrincipalKind


class AgentWriteReviewer:
    def needed(self, principal: Principal, fact: Fact, content: Any) -> ReviewNeeded:
        run = principal.run
        if principal.kind != PrincipalKind.RUN or run is None:
            return ReviewNeeded()
        tools = [t for t in run.agent.tools if isinstance(t, str)]
        findings = detect(review_text(content), tool_names=tools)
        # The key and tags are read beside the content; they fire a reason, with no span to mark.
        labels = detect("\n".join([fact.key or "", *fact.tags]), tool_names=tools)
        return ReviewNeeded(reasons_of([*findings, *labels], wide_scope=is_wide(fact)), findings)

    def open(self, *, principal: Principal, revision: Revision, needed: ReviewNeeded) -> uuid.UUID:
        approval = approval_open(
            principal=principal,
            revision=revision,
            reasons=needed.reasons,
            findings=needed.findings,
        )
        return approval.id


reviewer = AgentWriteReviewer()
