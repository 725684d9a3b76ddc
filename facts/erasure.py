"""The facts' part of an erasure: every fact about the person (or the conversation), gone.

A fact is *about* the target when its scope names them (`participant_id`, `user_id`, or the
`thread_id` for a conversation target) or when any of its revisions lists them as a subject.
For such a fact every revision is deleted (its subjects, embedding and search text are columns
or rows that go with it), then the links to and from the fact, then the fact itself. Revisions
under legal hold are kept and reported in `held` with their hold: their fact and its links stay
too, since a held revision cannot exist without them.

One batch handles at most `limit` facts, in primary-key order, inside the runner's
transaction; a fact that was erased no longer matches, so a resumed batch moves on to what is
left (idempotent). Rows are deleted with plain `QuerySet.delete()` on the ids of the batch.

For a Kindgi user the step also takes the user's id off the provenance of other facts they
wrote, verified or invalidated (`attributed_id`, `verified_by`, `invalidated_by` become
`"erased"`): facts by the user are not about the user, but their id is personal data.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef, Q

from facts.models import AttributionKind, Fact, Link, Revision, Subject
from kindmem.models import SubjectKind

if TYPE_CHECKING:
    from privacy.erasure import BatchResult, ErasureTarget

ERASED_MARK = "erased"


def facts_about(target: ErasureTarget) -> Q | None:
    """A Q over Fact naming the facts about the target; None when nothing can match."""
    kind = SubjectKind(target.kind)
    by_subject = Q(
        Exists(
            Subject.objects.filter(
                tenant_id=target.tenant_id,
                fact_id=OuterRef("pk"),
                kind=kind.value,
                subject_id=target.id,
            )
        )
    )
    if kind == SubjectKind.PARTICIPANT:
        return Q(participant_id=target.id) | by_subject
    if kind == SubjectKind.USER:
        try:
            user_id = uuid.UUID(target.id)
        except ValueError:
            return by_subject
        return Q(user_id=user_id) | by_subject
    if kind == SubjectKind.EXTERNAL:
        return by_subject
    return Q(thread_id=target.id)  # a conversation: the facts written in it


def _held_revisions(target: ErasureTarget, about: Q) -> list[dict[str, str]]:
    held = (
        Revision.objects.filter(
            tenant_id=target.tenant_id,
            legal_hold=True,
            fact__in=Fact.objects.filter(about, tenant_id=target.tenant_id),
        )
        .order_by("fact_id", "version")
        .values_list("id", "fact_id", "version")
    )
    return [
        {"kind": "revision", "id": str(rid), "fact_id": str(fid), "version": v, "hold": "legal"}
        for rid, fid, v in held
    ]


def _scrub_attribution(target: ErasureTarget, limit: int) -> list[str]:
    """Take a Kindgi user's id off the provenance of at most `limit` revisions."""
    uid = target.id
    ids = list(
        Revision.objects.filter(tenant_id=target.tenant_id)
        .filter(
            Q(attributed_kind=AttributionKind.USER, attributed_id=uid)
            | Q(verified_by=uid)
            | Q(invalidated_by=uid)
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    revisions = Revision.objects.filter(pk__in=ids)
    revisions.filter(attributed_kind=AttributionKind.USER, attributed_id=uid).update(
        attributed_id=ERASED_MARK
    )
    revisions.filter(verified_by=uid).update(verified_by=ERASED_MARK)
    revisions.filter(invalidated_by=uid).update(invalidated_by=ERASED_MARK)
    return [f"attribution:{i}" for i in ids]


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    from privacy.erasure import BatchResult

    about = facts_about(target)
    erasable = Exists(Revision.objects.filter(fact_id=OuterRef("pk"), legal_hold=False))
    fact_ids = list(
        Fact.objects.filter(about, erasable, tenant_id=target.tenant_id)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    erased: list[str] = []
    if fact_ids:
        revisions = Revision.objects.filter(fact_id__in=fact_ids, legal_hold=False)
        revision_ids = list(revisions.order_by("id").values_list("id", flat=True))
        # Subjects cascade in the database's sense only through Django's collector; delete
        # them first so the revision delete is one statement per table.
        Subject.objects.filter(revision_id__in=revision_ids).delete()
        # A held revision may point at an erased one (`supersedes`); drop that pointer.
        Revision.objects.filter(supersedes_id__in=revision_ids).update(supersedes=None)
        Revision.objects.filter(pk__in=revision_ids).delete()
        erased += [f"revision:{i}" for i in revision_ids]
        gone = list(
            Fact.objects.filter(pk__in=fact_ids)
            .exclude(Exists(Revision.objects.filter(fact_id=OuterRef("pk"))))
            .values_list("id", flat=True)
        )
        links = Link.objects.filter(Q(source_id__in=gone) | Q(target_id__in=gone))
        link_ids = list(links.order_by("id").values_list("id", flat=True))
        Link.objects.filter(pk__in=link_ids).delete()
        Fact.objects.filter(pk__in=gone).delete()
        erased += [f"link:{i}" for i in link_ids] + [f"fact:{i}" for i in gone]
    if len(fact_ids) == limit:
        return BatchResult(erased=erased, done=False)
    if target.kind == SubjectKind.USER:
        scrubbed = _scrub_attribution(target, limit - len(fact_ids))
        erased += scrubbed
        if len(scrubbed) == limit - len(fact_ids):
            return BatchResult(erased=erased, done=False)
    return BatchResult(erased=erased, done=True, held=_held_revisions(target, about))


def estimate(target: ErasureTarget) -> int:
    """Rows this step will erase (revisions, links and facts), for the progress bar."""
    facts = Fact.objects.filter(facts_about(target), tenant_id=target.tenant_id)
    revisions = Revision.objects.filter(fact__in=facts, legal_hold=False).count()
    links = Link.objects.filter(Q(source__in=facts) | Q(target__in=facts)).count()
    return revisions + links + facts.count()
