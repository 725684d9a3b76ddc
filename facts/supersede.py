"""A fact's next value from its writer: supersede (the whole value) and patch (a JSON merge
patch of it), with what an agent's run may alter and what the new revision carries over."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from api.content_schema import check_content
from api.errors import (
    FactNotFound,
    Forbidden,
)
from api.transactions import service_atomic
from facts.agent_writes import check_run_may_alter
from facts.authority import Door, Governed, authorize, overwrite_reasons, subject_set
from facts.merge_patch import patched
from facts.models import (
    Fact,
    InvalidationReason,
    Review,
    Revision,
    Trust,
    WritePolicy,
)
from facts.provenance import Attribution, attribution_of, content_hash
from facts.retention import (
    Retention,
    RetentionInput,
    invalidate,
)
from facts.review import ReviewNeeded, agent_write_review
from facts.revisions import (
    Draft,
    Verification,
    check_expected,
    embed_for_write,
    lock_current,
    next_version,
    subjects_of,
    write_revision,
)
from facts.scopes import (
    SubjectInput,
    persons_of_write,
)
from facts.write_policy import write_policy_query
from facts.writes import Outcome, WriteResult, check_validity, queued_for_review
from kindmem.access import Principal, PrincipalKind, readers_for
from kindmem.holds import assert_not_held


def adds_to(
    current: Revision,
    *,
    subjects: Sequence[SubjectInput] | None,
    retention: RetentionInput | None,
    source: Any,
    tags: Sequence[str] = (),
) -> bool:
    """Whether a write of the current revision's very content would still change something:
    other subjects, retention, source, or tags the fact lacks. What the write leaves out is
    not a change. `observed_at` and `caused_by_log_id` are this write's provenance, not the
    fact's: saying the same thing again, seen later, changes nothing (the content dedup)."""
    if subjects is not None and {(s.kind, s.id) for s in subjects} != {
        (s.kind, s.subject_id) for s in current.subjects.all()
    }:
        return True
    kept = Retention.of_revision(current)
    if retention is not None and kept.overridden_by(retention) != kept:
        return True
    if source is not None and source != current.source:
        return True
    return bool(set(tags) - set(current.fact.tags))


@service_atomic
def fact_supersede(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    content: Any,
    expected_version: int | None = None,
    subjects: Sequence[SubjectInput] | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    observed_at: datetime | None = None,
    retention: RetentionInput | None = None,
    source: Any = None,
    caused_by_log_id: Sequence[str] = (),
    tags: Sequence[str] = (),
    step_id: str | None = None,
    tool_call_id: str | None = None,
    door: Door = Door.API,
) -> WriteResult:
    """Write the fact's next revision (version + 1, `supersedes` the current one, which is
    invalidated `superseded`). With `expected_version`, a fact that moved on is a `conflict`.
    A retention given replaces the current revision's field by field; `tags` (from a re-posted
    `fact_create`) are added to the fact's.

    The same content and validity as the current revision changes nothing (`unchanged`),
    unless the write brings other subjects, retention, source or tags (`adds_to`): then the
    next revision carries the same content with those applied, and keeps its trust (a
    verified content stays verified under a new legal hold) and, when the retention is
    unchanged, its expiry.

    What the writer may change of the fact's retention, subjects and (the type's mutable
    fields) content is `facts.authority`'s table: a change it forbids is `forbidden`, naming
    the fields. An agent's run may not supersede a verified fact or another agent's
    (`forbidden`); its new value that must wait for review (`facts.review`, and
    `asserted-overwrite` for a fact a person, an app or staff asserted) is written `review:
    pending` beside the current revision, which stays current until a reviewer approves the
    new one."""
    # Embedded before the fact's row lock is taken: no writer queues behind the network.
    embedded = embed_for_write(content)
    fact, current = lock_current(principal, fact_id)
    policy = _check_may_supersede(
        principal, fact, current, expected_version, content, valid_from, valid_until
    )
    about = list(subjects) if subjects is not None else subjects_of(current)
    assert_not_held(principal.tenant_id, persons_of_write(fact, about))
    kept = Retention.of_revision(current)
    new_retention = kept.overridden_by(retention)
    authorize(
        principal,
        before=Governed(kept, subject_set(current.subjects.all()), current.content),
        after=Governed(new_retention, subject_set(about), content),
        mutable_fields=policy.mutable_fields if policy else (),
        door=door,
    )
    same_content = content_hash(content, valid_from, valid_until) == current.content_hash
    if same_content and not adds_to(
        current, subjects=subjects, retention=retention, source=source, tags=tags
    ):
        return WriteResult(current, Outcome.UNCHANGED)
    new_tags = _with_new_tags(fact, tags)
    detected = agent_write_review().needed(
        principal, fact, content, beside=(source,), identifiers=(step_id, tool_call_id)
    )
    needed = _with_overwrite(detected, principal, current)
    waits = bool(needed)
    _save_new_tags(fact, new_tags, waits=waits)
    who = attribution_of(principal)
    now = timezone.now()
    if not waits:
        invalidate(current, by=who.label, reason=InvalidationReason.SUPERSEDED, now=now)
    carried = _carried_over(principal, fact, current, who, kept, new_retention, same_content, waits)
    written = write_revision(
        fact=fact,
        version=next_version(fact),
        draft=Draft(
            content=content,
            valid_from=valid_from,
            valid_until=valid_until,
            observed_at=observed_at,
            source=source if source is not None else current.source,
            caused_by_log_id=caused_by_log_id,
            step_id=step_id,
            tool_call_id=tool_call_id,
        ),
        who=who,
        subjects=about,
        retention=new_retention,
        expires_at=carried.expires_at,
        # A value that waits supersedes nothing yet: `revision_approve` links it.
        supersedes=None if waits else current,
        trust=carried.trust,
        verified=carried.verified,
        review=Review.PENDING if waits else None,
        approved_at=carried.approved_at,
        # what approving it compares and swaps (`facts.stale`): a patch's base above all
        base_version=current.version if waits else None,
        embedded=embedded,
        now=now,
        read_back=True,  # what the response renders, read in the write's round trip
    )
    superseded = WriteResult(written.revision, Outcome.SUPERSEDED, stored=written.stored)
    return queued_for_review(principal, superseded, needed)


def _check_may_supersede(
    principal: Principal,
    fact: Fact,
    current: Revision,
    expected_version: int | None,
    content: Any,
    valid_from: datetime | None,
    valid_until: datetime | None,
) -> WritePolicy | None:
    """Refuse a supersede the run may not make, of a fact that moved on, with a validity that
    ends before it starts, or with content the type's schema refuses; the type's write policy."""
    check_run_may_alter(principal, fact, current)
    check_expected(current, expected_version)
    check_validity(valid_from, valid_until)
    policy = write_policy_query(principal.tenant_id, fact.type).first()
    check_content([policy.content_schema if policy else None], content, type=fact.type)
    return policy


def _with_overwrite(needed: ReviewNeeded, principal: Principal, current: Revision) -> ReviewNeeded:
    """The review's reasons, with `asserted-overwrite` where a run replaces what a person, an
    app or staff asserted (`facts.authority.overwrite_reasons`)."""
    extra = [r for r in overwrite_reasons(principal, current) if r not in needed.reasons]
    if not extra:
        return needed
    return ReviewNeeded([*needed.reasons, *extra], needed.findings)


def _with_new_tags(fact: Fact, tags: Sequence[str]) -> list[str]:
    """The tags of `tags` the fact lacks, added to it in memory (what the review reads)."""
    new_tags = sorted(set(tags) - set(fact.tags))
    if new_tags:
        fact.tags = sorted({*fact.tags, *new_tags})
    return new_tags


def _save_new_tags(fact: Fact, new_tags: list[str], *, waits: bool) -> None:
    """The fact's new tags, saved; refused for a value that waits for review: tags are the
    fact's, not a revision's, and cannot wait for a reviewer beside it."""
    if not new_tags:
        return
    if waits:
        raise Forbidden(
            "New tags on this fact would be read before its review; write them without them.",
            details={"tags": new_tags},
        )
    Fact.objects.filter(pk=fact.pk).update(tags=fact.tags)


@dataclass(frozen=True)
class _Carried:
    """What a next revision takes over from the current one."""

    expires_at: datetime | None
    trust: str | None = None  # None: the writer's
    verified: Verification | None = None
    approved_at: datetime | None = None


def _carried_over(
    principal: Principal,
    fact: Fact,
    current: Revision,
    who: Attribution,
    kept: Retention,
    new_retention: Retention,
    same_content: bool,
    waits: bool,
) -> _Carried:
    """New content starts afresh (the writer's trust, the retention's expiry). The same
    content with only what is said about it changed keeps the trust it had (an agent's write
    stays unverified), its approval unless the new value waits, and its expiry unless the
    retention moved."""
    expires_at = new_retention.expires_at(fact.created_at)
    if not same_content:
        return _Carried(expires_at=expires_at)
    trust = who.trust if principal.kind == PrincipalKind.RUN else current.trust
    verified = None
    if trust == Trust.VERIFIED:
        if current.verified_by and current.verified_at:
            verified = Verification(by=current.verified_by, at=current.verified_at)
        expires_at = None if new_retention.legal_hold else new_retention.keep_until
    elif new_retention == kept:
        expires_at = current.expires_at
    approved_at = None if waits else current.approved_at
    return _Carried(expires_at, trust, verified, approved_at)


def fact_patch(
    *,
    principal: Principal,
    fact_id: uuid.UUID | str,
    patch: Any,
    expected_version: int | None = None,
) -> WriteResult:
    """A JSON merge patch (RFC 7386) of the fact's content and validity, written as the next
    revision by `fact_supersede`: the same review, retention, hold, run and authority rules
    (the type's `WritePolicy.mutable_fields` among them), and the same outcome.

    The patch is applied to the revision read here, and written only if that revision is still
    the current one (`expected_version` is always passed on): a concurrent write answers
    `conflict` rather than being overwritten by a patch computed from what it replaced."""
    current = _current_readable(principal, fact_id)
    check_expected(current, expected_version)
    result = patched(
        content=current.content,
        valid_from=current.valid_from,
        valid_until=current.valid_until,
        patch=patch,
    )
    return fact_supersede(
        principal=principal,
        fact_id=current.fact_id,
        content=result.content,
        expected_version=current.version,
        valid_from=result.valid_from,
        valid_until=result.valid_until,
    )


def _current_readable(principal: Principal, fact_id: uuid.UUID | str) -> Revision:
    try:
        ident = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    current = (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers_for(principal))
        .filter(fact_id=ident)
        .select_related("fact")
        .first()
    )
    if current is None:
        raise FactNotFound()
    return current
