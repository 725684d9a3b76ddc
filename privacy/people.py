"""A person's whole record in one tenant: what the console's person page shows.

Everything kindmem holds about a participant, a Kindgi user or an external subject id (or one
conversation): their facts with every revision, trust and review state; their conversations
and message counts; review records; runs and the newest run log entries; who read their data
(the audit events naming them); their access requests and erasures. Each part comes from its
owner's QuerySet method (`Fact.objects.about`, `Conversation.objects.about`, ...), newest
first, at most `limit` rows, with its total: the page costs the same few queries whether the
person has ten rows or a hundred thousand (tests/privacy/test_people.py).

`search_people` answers the console's search box: an exact id (any kind), or words of a
memory (the current revisions' keyword index), each hit naming the person it is about.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.postgres.search import SearchQuery
from django.db.models import Count, F, Func, OuterRef, Prefetch, Q, QuerySet, Subquery, Window

from api.errors import ValidationFailed
from approvals.models import Approval, ApprovalStatus
from audit.models import AuditEvent
from facts.models import Fact, Revision, unshown
from kindmem.models import Run, SubjectKind, User
from kindmem.subjects import Subject
from privacy.models import UNFINISHED, AccessRequest, ErasureRequest
from recall.models import Conversation, Message
from runlog.models import LogEntry

# Rows shown per part of the page; each part also says how many there are in all.
PAGE = 50
# Search hits listed.
SEARCH_LIMIT = 20

# The parts of the page, each shown only to staff who may see it (privacy/admin.py).
SECTIONS = ("facts", "approvals", "conversations", "runs", "reads", "requests")


@dataclass
class Part:
    rows: list[Any] = field(default_factory=list)
    total: int = 0

    @property
    def more(self) -> int:
        return max(self.total - len(self.rows), 0)


@dataclass
class PersonRecord:
    tenant_id: uuid.UUID
    subject: Subject
    user: User | None = None  # the Kindgi user, for a user subject
    facts: Part | None = None
    approvals: Part | None = None
    pending_approvals: int = 0
    conversations: Part | None = None
    messages_total: int = 0
    runs: Part | None = None
    log_entries: Part | None = None
    reads: Part | None = None
    access_requests: list[AccessRequest] = field(default_factory=list)
    erasures: list[ErasureRequest] = field(default_factory=list)
    erasure_underway: ErasureRequest | None = None

    @property
    def is_empty(self) -> bool:
        """Nothing in the tenant is about this id (a typo, or someone of another tenant)."""
        parts = [self.facts, self.approvals, self.conversations, self.runs, self.reads]
        return not (
            any(part.total for part in parts if part is not None)
            or self.access_requests
            or self.erasures
        )

    @property
    def shown_fact_ids(self) -> list[uuid.UUID]:
        return [fact.pk for fact in self.facts.rows] if self.facts else []


def _count(rows: QuerySet) -> Subquery:
    """How many `rows` (correlated to the outer row by the caller, and to its tenant here): a
    subquery, not a join and GROUP BY, since a tenant-owned table's key is (tenant_id, id) and
    a GROUP BY on id alone no longer covers the row's other columns."""
    counted = rows.filter(tenant_id=OuterRef("tenant_id")).order_by()
    return Subquery(counted.annotate(n=Func(F("pk"), function="COUNT")).values("n"))


def _part(
    which: QuerySet[Any],
    limit: int,
    shape: Callable[[QuerySet[Any]], QuerySet[Any]] = lambda rows: rows,
    **windows: Any,
) -> tuple[Part, dict[str, Any] | None]:
    """The first `limit` rows of `which` (ordered) and how many there are in all, in two
    queries whatever the person's size: the ids and a window count over every match, taken
    before the LIMIT and narrow (a person with 13,000 facts: bench/console_pages.py); then
    only those rows, with `shape`'s joins, annotations and prefetches. `windows` adds more
    window counts; returns the part and the first id row (None: no rows), which carries
    them."""
    page = list(
        which.annotate(part_total=Window(Count("*")), **windows).values(
            "pk", "part_total", *windows
        )[:limit]
    )
    if not page:
        return Part(), None
    ids = [row["pk"] for row in page]
    by_pk = shape(which.model._default_manager.filter(pk__in=ids)).in_bulk()
    # a row removed between the two queries is left out, not an error
    rows = [by_pk[pk] for pk in ids if pk in by_pk]
    return Part(rows=rows, total=page[0]["part_total"]), page[0]


def person_record(
    *, tenant_id: uuid.UUID, subject: Subject, sections: set[str], limit: int | None = None
) -> PersonRecord:
    """The person's record in `tenant_id`, with the parts in `sections` (see SECTIONS), at
    most `limit` (PAGE) rows each."""
    limit = limit or PAGE
    record = PersonRecord(tenant_id=tenant_id, subject=subject)
    if subject.kind == SubjectKind.USER and subject.user_uuid is not None:
        record.user = User.objects.filter(tenant_id=tenant_id, pk=subject.user_uuid).first()
    if "facts" in sections:
        revisions = Revision.objects.shown().select_related("approval").order_by("-version")
        ids, total = Fact.objects.of_tenant(tenant_id).newest_about(subject, limit)
        shown = (
            Fact.objects.filter(pk__in=ids)
            .select_related("project", "user")
            .prefetch_related(Prefetch("revisions", queryset=revisions, to_attr="timeline"))
            .in_bulk()
        )
        # a fact removed between the two queries is left out, not an error
        record.facts = Part(rows=[shown[pk] for pk in ids if pk in shown], total=total)
    if "approvals" in sections:
        record.approvals, first = _part(
            Approval.objects.of_tenant(tenant_id).about(subject).order_by("-created_at", "-pk"),
            limit,
            lambda rows: rows.select_related("revision__fact", "agent", "decided_by_user").defer(
                *unshown("revision__")
            ),
            part_pending=Window(Count("pk", filter=Q(status=ApprovalStatus.PENDING))),
        )
        record.pending_approvals = first["part_pending"] if first else 0
    if "conversations" in sections:
        conversations = Conversation.objects.of_tenant(tenant_id).about(subject)
        record.conversations, _ = _part(
            conversations.order_by("-created_at", "-pk"),
            limit,
            lambda rows: rows.select_related("agent", "project", "user").annotate(
                message_count=_count(Message.objects.filter(conversation_id=OuterRef("pk")))
            ),
        )
        record.messages_total = Message.objects.filter(conversation__in=conversations).count()
    if "runs" in sections:
        runs = Run.objects.filter(tenant_id=tenant_id).about(subject)
        record.runs, _ = _part(
            runs.order_by("-created_at", "-pk"),
            limit,
            lambda rows: rows.select_related("agent", "project").annotate(
                entry_count=_count(LogEntry.objects.filter(run_id=OuterRef("pk")))
            ),
        )
        record.log_entries, _ = _part(
            LogEntry.objects.filter(tenant_id=tenant_id, run__in=runs).order_by(
                "-created_at", "-sequence"
            ),
            limit,
            lambda rows: rows.select_related("run__agent"),
        )
    if "reads" in sections:
        record.reads, _ = _part(
            AuditEvent.objects.of_tenant(tenant_id).about_subject(str(subject)).order_by("-seq"),
            limit,
            lambda rows: rows.only(
                "seq",
                "timestamp",
                "phase",
                "outcome",
                "kind",
                "endpoint",
                "principal",
                "principal_kind",
                "agent_id",
            ),
        )
    if "requests" in sections:
        record.access_requests = list(
            AccessRequest.objects.filter(
                tenant_id=tenant_id, subject_kind=subject.kind.value, subject_id=subject.id
            )
            .defer("export_json", "export_zip")
            .order_by("-created_at")[:limit]
        )
        record.erasures = list(
            ErasureRequest.objects.of_subject(tenant_id, subject).order_by("-created_at")[:limit]
        )
        record.erasure_underway = next(
            (e for e in record.erasures if e.status in UNFINISHED),
            None,
        )
    return record


@dataclass(frozen=True)
class PersonHit:
    subject: Subject
    why: str  # "exact id", or the memory text that matched
    fact_id: uuid.UUID | None = None


def search_people(*, tenant_id: uuid.UUID, query: str) -> list[PersonHit]:
    """People of the tenant that `query` finds: "kind:id" as it is; a bare id that is a
    participant's, a Kindgi user's (UUID or username) or an external subject's; and the people
    the current memories matching the words are about. A few queries, at most SEARCH_LIMIT
    hits."""
    query = query.strip()
    if not query or "\x00" in query:
        return []
    hits: list[PersonHit] = []
    seen: set[Subject] = set()

    def add(subject: Subject, why: str, fact_id: uuid.UUID | None = None) -> None:
        if subject not in seen and len(hits) < SEARCH_LIMIT:
            seen.add(subject)
            hits.append(PersonHit(subject, why, fact_id))

    kind, sep, rest = query.partition(":")
    if sep and kind in SubjectKind.values and rest:
        # A malformed id is no hit; the words may still find someone.
        with contextlib.suppress(ValidationFailed):
            add(Subject.parse(kind, rest), "the id as typed")
    if len(query) <= 200:
        participant = Subject(SubjectKind.PARTICIPANT, query)
        if (
            Fact.objects.of_tenant(tenant_id).about(participant).exists()
            or Conversation.objects.of_tenant(tenant_id).about(participant).exists()
            or Run.objects.filter(tenant_id=tenant_id).about(participant).exists()
        ):
            add(participant, "participant id")
        users = User.objects.filter(tenant_id=tenant_id, username=query)
        with contextlib.suppress(ValueError):
            users = users | User.objects.filter(tenant_id=tenant_id, pk=uuid.UUID(query))
        for user in users[:5]:
            add(Subject.user(user.pk), f"Kindgi user {user.get_username()}")
        external = Subject(SubjectKind.EXTERNAL, query)
        if Fact.objects.of_tenant(tenant_id).about(external).exists():
            add(external, "external subject id")
    words = SearchQuery(query, config="english", search_type="websearch")
    matching = (
        Revision.objects.of_tenant(tenant_id)
        .current()
        .filter(search_vector=words)
        .select_related("fact")
        .prefetch_related("subjects")
        .order_by("-created_at")[: SEARCH_LIMIT * 2]
    )
    for revision in matching:
        text = revision.search_text[:160]
        fact = revision.fact
        if fact.participant_id:
            add(Subject(SubjectKind.PARTICIPANT, fact.participant_id), text, fact.pk)
        if fact.user_id:
            add(Subject.user(fact.user_id), text, fact.pk)
        for named in revision.subjects.all():
            add(Subject(SubjectKind(named.kind), named.subject_id), text, fact.pk)
    return hits
