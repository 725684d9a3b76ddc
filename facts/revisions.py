"""The revision write core: one immutable revision with its subjects, and the reads every
writer of a fact makes under the fact's row lock (the current revision, the next version).

Every public action in `facts.services` (and `remember` in approvals) writes through
`write_revision`; nothing else inserts revisions.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Max

from api.background import enqueue_on_commit
from api.errors import Conflict, EmbeddingUnavailable, FactNotFound
from compiled import compiled, insert
from embeddings.budget import (
    Embedded,
    EmbedOutcome,
    PendingEmbedding,
    embed_within_budget,
)
from embeddings.providers import get_embedder
from facts.announce import fact_changed
from facts.models import (
    EmbeddingState,
    Fact,
    Revision,
    Subject,
    subject_rows,
)
from facts.provenance import Attribution, content_hash, search_text_of
from facts.retention import Retention
from facts.scopes import SubjectInput
from facts.tasks import embed_revisions
from kindmem.access import Principal, Readers, readers_for


@dataclass(frozen=True)
class Draft:
    """What a writer says in a revision, and the run step that said it."""

    content: Any
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    observed_at: datetime | None = None
    source: Any = None
    caused_by_log_id: Sequence[str] = ()
    step_id: str | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Written:
    """What `write_revision` wrote, and what it read in the same round trip."""

    revision: Revision
    # the revision as stored (`stored_revision`), where asked (`read_back`)
    stored: Revision | None = None
    # where asked (`writable_for`): whether those readers may read the fact's containers
    writable: bool = True


@compiled(generic=True)  # by primary key: one plan whatever the value
def stored_revision(tenant_id: uuid.UUID, pk: uuid.UUID) -> Any:
    """A revision as the database keeps it (JSON as stored), its fact and its subjects (in
    `subject_rows`): what a write answers with."""
    # the vector and the tsvector are large and never rendered
    return (
        Revision.objects.filter(tenant_id=tenant_id, pk=pk)
        .select_related("fact")
        .defer("embedding", "search_vector", "search_text")
        .annotate(subject_rows=subject_rows(tenant_id))
    )


@compiled(generic=True)  # by the new fact's primary key: one plan whatever the readers' values
def _readable_fact(tenant_id: uuid.UUID, fact_id: uuid.UUID, readers: Readers) -> Any:
    return Fact.objects.filter(tenant_id=tenant_id, pk=fact_id).readable_by(readers).only("pk")[:1]


@dataclass(frozen=True)
class Verification:
    by: str
    at: datetime


def embed_for_write(content: Any) -> Embedded:
    """The content's search text embedded within the write budget (before any lock)."""
    return embed_within_budget([search_text_of(content)])


def embedding_for_write(content: Any) -> PendingEmbedding:
    """`embed_for_write`, started now, while the write reads what it needs: its `result()`
    (before any lock) waits for what is left of the budget."""
    return PendingEmbedding([search_text_of(content)])


def embedded_copy(revision: Revision) -> Embedded:
    """A new revision of the same text reuses the vector. Without one it waits for the task:
    the caller holds the fact's row lock, and no lock waits on the network."""
    if revision.embedding is not None and revision.embedding_model:
        return Embedded(
            EmbedOutcome.DONE, vectors=[list(revision.embedding)], model=revision.embedding_model
        )
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable:
        return Embedded(EmbedOutcome.FAILED)
    return Embedded(EmbedOutcome.NONE if embedder is None else EmbedOutcome.PENDING)


def write_revision(
    *,
    fact: Fact,
    version: int,
    draft: Draft,
    who: Attribution,
    subjects: Sequence[SubjectInput],
    retention: Retention,
    expires_at: datetime | None,
    embedded: Embedded,
    now: datetime,
    supersedes: Revision | None = None,
    trust: str | None = None,
    verified: Verification | None = None,
    review: str | None = None,
    approved_at: datetime | None = None,
    base_version: int | None = None,
    new_fact: bool = False,
    writable_for: Readers | None = None,
    read_back: bool = False,
) -> Written:
    """Insert one revision of `fact` with its subjects, in one round trip; with `new_fact`,
    `fact` itself first. In the same round trip, after them: with `writable_for`, whether those
    readers may read the fact (the reader guard on the fact as written: a writer may only write
    where it could read), and with `read_back`, the revision as stored (what the response
    renders). A value that waits for review names the version of the fact's approved value it
    was computed from (`base_version`: see `facts.stale`). A revision the write could not embed
    is queued for `embed_revisions` when the transaction commits."""
    vector = embedded.vectors[0] if embedded.vectors else None
    revision = Revision(
        tenant_id=fact.tenant_id,
        fact=fact,
        version=version,
        content=draft.content,
        content_hash=content_hash(draft.content, draft.valid_from, draft.valid_until),
        trust=trust or who.trust,
        verified_by=verified.by if verified else None,
        verified_at=verified.at if verified else None,
        attributed_kind=who.kind,
        attributed_id=who.id,
        attributed_agent_version=who.agent_version,
        generated_by_run_id=who.run_id,
        generated_by_step_id=draft.step_id,
        generated_by_tool_call_id=draft.tool_call_id,
        valid_from=draft.valid_from,
        valid_until=draft.valid_until,
        observed_at=draft.observed_at,
        created_at=now,
        keep_days=retention.keep_days,
        keep_until=retention.keep_until,
        legal_hold=retention.legal_hold,
        expires_at=expires_at,
        source=draft.source,
        caused_by_log_id=list(draft.caused_by_log_id),
        supersedes=supersedes,
        review=review,
        approved_at=approved_at,
        base_version=base_version,
        search_text=search_text_of(draft.content),
        embedding=vector,
        embedding_model=embedded.model if vector is not None else None,
        embedding_state=EmbeddingState(embedded.state.value),
    )
    rows = [
        Subject(
            tenant_id=fact.tenant_id, revision=revision, fact=fact, kind=s.kind, subject_id=s.id
        )
        for s in {(s.kind, s.id): s for s in subjects}.values()
    ]
    groups = ([fact],) if new_fact else ()
    then = []
    if writable_for is not None:
        then.append(_readable_fact(fact.tenant_id, fact.pk, writable_for))
    if read_back:
        then.append(stored_revision(revision.tenant_id, revision.pk))
    found = insert(*groups, [revision], rows, then=then)
    writable = bool(found.pop(0)) if writable_for is not None else True
    stored = found.pop(0)[0] if read_back else None
    if review is None:  # readable now; a value waiting for review is announced by approvals
        fact_changed(fact=fact, revision=revision, change="written", subjects=lambda: subjects)
    if embedded.needs_task:
        revision_id, tenant = str(revision.pk), str(fact.tenant_id)
        # a broker that cannot be reached does not fail the write: embed_backlog embeds it
        enqueue_on_commit(embed_revisions, [revision_id], tenant_id=tenant)
    return Written(revision, stored, writable)


def lock_current(
    principal: Principal, fact_id: uuid.UUID | str, readers: Readers | None = None
) -> tuple[Fact, Revision]:
    """The fact, row-locked, and its current readable revision; `fact-not-found` when the
    caller may not read it (indistinguishable from a missing fact). Concurrent writers of one
    fact queue on the lock, so each sees the revision the one before it wrote."""
    readers = readers or readers_for(principal)
    try:
        ident = uuid.UUID(str(fact_id))
    except ValueError:
        raise FactNotFound() from None
    fact = (
        Fact.objects.select_for_update()
        .of_tenant(principal.tenant_id)
        .filter(pk=ident)
        .readable_by(readers)
        .first()
    )
    if fact is None:
        raise FactNotFound()
    current = (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers)
        .filter(fact=fact)
        .prefetch_related("subjects")
        .first()
    )
    if current is None:
        raise FactNotFound()
    return fact, current


def check_expected(current: Revision, expected_version: int | None) -> None:
    if expected_version is not None and current.version != expected_version:
        raise Conflict(
            "The fact changed since that version was read.",
            details={"expected_version": expected_version, "current_version": current.version},
        )


def next_version(fact: Fact) -> int:
    """The fact's next version number. Counted over every revision, not the current one's + 1:
    a successor waiting for review already holds a number. Call it under the fact's row lock."""
    top = Revision.objects.filter(tenant_id=fact.tenant_id, fact=fact).aggregate(Max("version"))
    return (top["version__max"] or 0) + 1


def subjects_of(revision: Revision) -> list[SubjectInput]:
    return [SubjectInput(kind=s.kind, id=s.subject_id) for s in revision.subjects.all()]
