"""`fact.changed`: a fact's readable value changed (written, approved from review, deleted),
announced to the tenant's webhooks in the write's transaction (webhooks/outbox.py). A value
that waits for review is not a change yet: `approval.pending` says it waits."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from facts.models import Fact, Revision
from facts.scopes import SubjectInput, persons_of_write, scope_of
from webhooks.models import EventKind
from webhooks.outbox import About, outbox_record


def fact_about(fact: Fact, revision: Revision, subjects: Iterable[SubjectInput]) -> About:
    """What an opted-in endpoint hears of a fact's revision: its content and scope; and whom
    it is about."""
    return About(
        personal={
            "content": revision.content,
            "scope": {k: str(v) if v is not None else None for k, v in scope_of(fact).items()},
        },
        subjects=persons_of_write(fact, subjects),
    )


def fact_changed(
    *,
    fact: Fact,
    revision: Revision,
    change: str,
    subjects: Callable[[], Iterable[SubjectInput]],
) -> None:
    """Announce `change` ("written", "approved", "deleted") of `fact`, now `revision`;
    `subjects` is read only when an endpoint listens."""
    outbox_record(
        tenant_id=fact.tenant_id,
        kind=EventKind.FACT_CHANGED,
        ordering_key=f"fact:{fact.pk}",
        data={
            "fact_id": str(fact.pk),
            "revision_id": str(revision.pk),
            "version": revision.version,
            "type": fact.type,
            "change": change,
        },
        about=lambda: fact_about(fact, revision, subjects()),
    )
