"""What an agent's run may write through the facts routes, and when its write waits for a
person: remember's review rules, whatever the route."""

from __future__ import annotations

from typing import Any

from api.errors import Forbidden
from facts.models import AttributionKind, Fact, Revision, Trust
from facts.review_reasons import Finding, detect, reasons_of, review_text
from kindmem.access import Principal, PrincipalKind


def is_wide(fact: Fact) -> bool:
    """Whether a fact reaches beyond one person or conversation: it names no participant, user
    or thread (project-, org- or tenant-wide). The seed's `wide-scope`, for any route."""
    return not (fact.participant_id or fact.user_id or fact.thread_id)


def agent_review(principal: Principal, fact: Fact, content: Any) -> tuple[list[str], list[Finding]]:
    """Why an agent's write must wait for a person. `wide-scope` for a fact beyond one person
    or conversation; `instruction-like` and `hidden-characters` from the content as a reviewer
    reads it (`review_text`), its slot key and its tags. Nothing for any other writer (a person
    or an app asserts what it writes)."""
    run = principal.run
    if principal.kind != PrincipalKind.RUN or run is None:
        return [], []
    tools = [t for t in run.agent.tools if isinstance(t, str)]
    findings = detect(review_text(content), tool_names=tools)
    # The key and tags are read beside the content; they fire a reason, with no span to mark.
    labels = detect("\n".join([fact.key or "", *fact.tags]), tool_names=tools)
    return reasons_of([*findings, *labels], wide_scope=is_wide(fact)), findings


def check_run_may_alter(
    principal: Principal, fact: Fact, current: Revision, *, deleting: bool = False
) -> None:
    """A run never alters a verified fact (a person checked it) nor another agent's fact (its
    slot), and deletes only facts about its own end user, user or conversation: a deletion
    cannot wait for review, and a wider fact is read by every other end user. `forbidden`,
    changing nothing."""
    run = principal.run
    if principal.kind != PrincipalKind.RUN or run is None:
        return
    if current.trust == Trust.VERIFIED:
        raise Forbidden("A verified fact is changed by a person, never by an agent's run.")
    others = (
        Revision.objects.of_tenant(fact.tenant_id)
        .approved()
        .filter(fact=fact, attributed_kind=AttributionKind.AGENT)
        .exclude(attributed_id=run.agent.agent_id)
    )
    if others.exists():
        raise Forbidden("This fact is another agent's; a run changes only its own agent's facts.")
    if deleting and is_wide(fact):
        raise Forbidden(
            "A run deletes only facts about its own end user, user or conversation; this one is "
            "read beyond them."
        )
