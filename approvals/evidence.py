"""What the review queue shows beside a memory waiting for a person: the value it would
replace, as a word diff (`facts.revision_diff`), whether approving it would be refused because
the fact moved on since it was written (`facts.stale`: then the fact's value now, beside it),
and the conversation messages it was derived from (its source's `derived_from`,
`<conversation>#<sequence>`, as an extraction writes them).

Loaded for a whole page at once (one query for the replaced values, one for staleness, one for
the messages), so the queue costs the same for two rows and for fifty; the messages are read
through recall's holds, so nothing of a person under erasure is shown. Showing them is a console
read of the people they are about, audited by the caller (`ApprovalAdmin`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from approvals.models import Approval, ApprovalStatus
from facts.models import Revision
from facts.revision_diff import WordDiff, revision_text, word_diff
from facts.stale import Staleness, stale_among
from recall.models import Message, message_ref

# Cited messages shown per memory, and characters of each: the evidence, not the transcript.
MAX_CITED = 8
CITED_CHARS = 400


@dataclass(frozen=True)
class Cited:
    ref: str
    role: str
    text: str


@dataclass
class Evidence:
    diff: WordDiff | None = None  # the memory against the value it would replace
    # approving it would be refused (`stale-approval`): how the fact moved on, and its value now
    stale: Staleness | None = None
    current_text: str | None = None
    cited: list[Cited] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # cited, no longer there (deleted, erased)
    subjects: set[str] = field(default_factory=set)  # whom the shown messages are about


def with_replaced(approvals: QuerySet[Approval]) -> QuerySet[Approval]:
    """`replaced_content` on each approval: what its fact reads now, the approved current
    revision a pending successor would replace (None for a new fact)."""
    current = Revision.objects.filter(
        tenant_id=OuterRef("tenant_id"),
        fact_id=OuterRef("fact_id"),
        invalidated_at__isnull=True,
        review__isnull=True,
    ).values("content")[:1]
    return approvals.annotate(replaced_content=Subquery(current))


def cited_refs(source: Any) -> list[str]:
    """The message refs a revision's source says it was derived from."""
    refs = source.get("derived_from") if isinstance(source, dict) else None
    if not isinstance(refs, list):
        return []
    return [r for r in refs if isinstance(r, str) and "#" in r][:MAX_CITED]


def _split(ref: str) -> tuple[str, int] | None:
    thread, _, sequence = ref.rpartition("#")
    return (thread, int(sequence)) if thread and sequence.isdigit() else None


def evidence_attach(approvals: Sequence[Approval]) -> None:
    """Set `evidence` on each approval of a page (annotated by `with_replaced`)."""
    wanted = {
        parsed
        for approval in approvals
        for ref in cited_refs(approval.revision.source)
        if (parsed := _split(ref)) is not None
    }
    found: dict[str, Message] = {}
    if wanted and approvals:
        tenant_id = approvals[0].tenant_id
        condition = reduce(
            or_, (Q(conversation__thread_id=t, sequence=s) for t, s in sorted(wanted))
        )
        messages = (
            Message.objects.of_tenant(tenant_id)
            .filter(condition)
            .not_held()
            .select_related("conversation")
            .only(
                "sequence",
                "role",
                "text",
                "conversation__thread_id",
                "conversation__participant_id",
                "conversation__user_id",
            )
        )
        found = {message_ref(m.conversation.thread_id, m.sequence): m for m in messages}
    waiting: dict[Any, list[Any]] = {}  # by tenant: a platform console's page spans several
    for a in approvals:
        if a.status == ApprovalStatus.PENDING and a.revision.invalidated_at is None:
            waiting.setdefault(a.tenant_id, []).append(a.revision_id)
    stale = {
        revision_id: staleness
        for tenant_id, revision_ids in waiting.items()
        for revision_id, staleness in stale_among(tenant_id, revision_ids).items()
    }
    for approval in approvals:
        evidence = Evidence(stale=stale.get(approval.revision_id))
        replaced = getattr(approval, "replaced_content", None)
        if replaced is not None and evidence.stale is not None:
            # not "what it would replace": approving it is refused; the value it stands against
            evidence.current_text = revision_text(replaced)
        elif replaced is not None and approval.revision.review is not None:
            evidence.diff = word_diff(
                revision_text(replaced), revision_text(approval.revision.content)
            )
        for ref in cited_refs(approval.revision.source):
            message = found.get(ref)
            if message is None:
                evidence.missing.append(ref)
                continue
            text = message.text
            shown = text if len(text) <= CITED_CHARS else text[:CITED_CHARS] + "…"
            evidence.cited.append(Cited(ref=ref, role=message.role, text=shown))
            conversation = message.conversation
            if conversation.participant_id:
                evidence.subjects.add(f"participant:{conversation.participant_id}")
            elif conversation.user_id:
                evidence.subjects.add(f"user:{conversation.user_id}")
        approval.evidence = evidence  # type: ignore[attr-defined]


def shown_messages(approvals: Iterable[Approval]) -> tuple[list[str], set[str]]:
    """The refs of the messages a page showed, and whom they are about (its console read)."""
    refs: list[str] = []
    subjects: set[str] = set()
    for approval in approvals:
        evidence: Evidence | None = getattr(approval, "evidence", None)
        if evidence is not None:
            refs += [c.ref for c in evidence.cited]
            subjects |= evidence.subjects
    return refs, subjects
