"""The facts' part of an erasure: every fact about the person (or the conversation), gone.

A fact is *about* the target when its scope names them (`participant_id`, `user_id`, or the
`thread_id` for a conversation target) or when any of its revisions lists them as a subject.
For such a fact every revision is deleted (its subjects, embedding and search text are columns
or rows that go with it), then the links to and from the fact, then the fact itself. Revisions
under legal hold are kept and reported in `held` with their hold: their fact and its links stay
too, since a held revision cannot exist without them. Such a fact is frozen when the step
finishes (`Fact.frozen_at`): kept for the privacy officer's access export, read and written by
no credential afterwards (`kindmem.holds.frozen`), where the erasure's hold no longer hides it.

One batch handles at most `limit` facts, in primary-key order, inside the runner's
transaction; a fact that was erased no longer matches, so a resumed batch moves on to what is
left (idempotent). Rows are deleted with plain `QuerySet.delete()` on the ids of the batch.

For a Kindgi user the step also takes the user's id off the provenance of other facts they
wrote, verified or invalidated (`attributed_id`, `verified_by`, `invalidated_by` become
`"erased"`): facts by the user are not about the user, but their id is personal data.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from facts.models import Fact, FactQuerySet, Link, Revision, Subject
from kindmem.erasure import HELD_SHOWN, BatchResult, ErasureTarget, StepPreview
from kindmem.models import SubjectKind

ERASED_MARK = "erased"


def facts_about(target: ErasureTarget) -> FactQuerySet:
    """The target's facts in its tenant (`Fact.objects.about`)."""
    return Fact.objects.of_tenant(target.tenant_id).about(target.subject)


def _held(target: ErasureTarget) -> QuerySet[Revision]:
    return Revision.objects.filter(
        tenant_id=target.tenant_id, legal_hold=True, fact__in=facts_about(target)
    )


def _held_revisions(target: ErasureTarget, limit: int | None = None) -> list[dict[str, Any]]:
    held = _held(target).order_by("fact_id", "version").values_list("id", "fact_id", "version")
    if limit is not None:
        held = held[:limit]
    return [
        {"kind": "revision", "id": str(rid), "fact_id": str(fid), "version": v, "hold": "legal"}
        for rid, fid, v in held
    ]


# The provenance columns that may name a Kindgi user, bare (`attributed_id`) or prefixed
# (`verified_by` / `invalidated_by`: "user:<id>", "staff:<id>" from the console).
_PROVENANCE_COLUMNS = ("attributed_id", "verified_by", "invalidated_by")


def _naming_user(target: ErasureTarget) -> QuerySet[Revision]:
    naming = Q()
    for column in _PROVENANCE_COLUMNS:
        naming |= Q(**{f"{column}__contains": target.id})
    return Revision.objects.filter(tenant_id=target.tenant_id).filter(naming)


def _scrub_attribution(target: ErasureTarget, limit: int) -> list[str]:
    """Take a Kindgi user's id, in any spelling, off the provenance of at most `limit`
    revisions."""
    uid = target.id
    ids = list(_naming_user(target).order_by("id").values_list("id", flat=True)[:limit])
    revisions = Revision.objects.filter(pk__in=ids)
    for column in _PROVENANCE_COLUMNS:
        revisions.filter(**{f"{column}__contains": uid}).update(**{column: ERASED_MARK})
    return [f"attribution:{i}" for i in ids]


def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
    erasable = Exists(
        Revision.objects.filter(
            tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("pk"), legal_hold=False
        )
    )
    fact_ids = list(
        facts_about(target).filter(erasable).order_by("id").values_list("id", flat=True)[:limit]
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
            .exclude(
                Exists(
                    Revision.objects.filter(tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("pk"))
                )
            )
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
    _freeze_held(target)
    return BatchResult(erased=erased, done=True, held=_held_revisions(target))


def _freeze_held(target: ErasureTarget) -> None:
    """Freeze the target's facts the erasure kept under legal hold (idempotent: a resumed last
    batch freezes nothing twice)."""
    Fact.objects.filter(pk__in=_held(target).values("fact_id"), frozen_at__isnull=True).update(
        frozen_at=timezone.now()
    )


def preview(target: ErasureTarget) -> StepPreview:
    """What `erase_batch` would erase now: every revision not under legal hold, the facts left
    without revisions (a fact with a held revision stays) and their links; for a Kindgi user,
    the other revisions whose provenance names them. Counts only, in a few queries."""
    facts = facts_about(target)
    gone = facts.exclude(
        Exists(
            Revision.objects.filter(
                tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("pk"), legal_hold=True
            )
        )
    )
    counts = {
        "fact": gone.count(),
        "revision": Revision.objects.filter(fact__in=facts, legal_hold=False).count(),
        "link": Link.objects.filter(Q(source__in=gone) | Q(target__in=gone)).count(),
    }
    if target.kind == SubjectKind.USER:
        kept = _naming_user(target).exclude(Q(fact__in=facts) & Q(legal_hold=False))
        counts["attribution"] = kept.count()
    return StepPreview(
        counts=counts,
        held=_held_revisions(target, limit=HELD_SHOWN),
        held_count=_held(target).count(),
    )
