"""What an agent's run may alter through the facts routes, whatever the route (whether its
write waits for a person is remember's review: `facts.review`)."""

from __future__ import annotations

from api.errors import Forbidden
from facts.models import AttributionKind, Fact, Revision, Trust
from kindmem.access import Principal, PrincipalKind


def is_wide(fact: Fact) -> bool:
    """Whether a fact reaches beyond one person or conversation: it names no participant, user
    or thread (project-, org- or tenant-wide). The seed's `wide-scope`, for any route."""
    return not (fact.participant_id or fact.user_id or fact.thread_id)


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
