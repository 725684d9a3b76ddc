"""The `remember` tool: what an agent remembers, checked against its declarations, written into
its slot (`facts.slots`), and queued for a person when it must wait.

An agent chooses only the type (among those its agent declares), the text, the slot (`key`)
and how long it is true (`valid_until`). Everything else comes from the declaration and the
run: the scope, the subjects (the conversation's end user, else the run's user), `trust:
unverified`, the attribution (agent and version) and the provenance (run, step, tool call).
A memory whose declared scope is wide, whose text reads like an instruction or hides
characters, or that would replace a verified value, waits for review: no read sees it until
a person approves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from api.content_schema import check_content
from api.errors import Forbidden, InvalidFact
from api.tracing import memory_operation
from approvals import gate
from approvals.models import Approval, ApprovalStatus
from approvals.services import approval_open
from facts.review import ASSERTED_OVERWRITE, VERIFIED_SLOT, Finding
from facts.scopes import SubjectInput
from facts.services import type_content_schema
from facts.slots import SlotOutcome, SlotWrite, slot_write
from kindmem import declarations
from kindmem.access import Principal, PrincipalKind
from kindmem.models import Run, SubjectKind


@dataclass(frozen=True)
class Remembered:
    result: SlotWrite
    approval: Approval | None
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def remember_scope(declaration: declarations.MemoryDeclaration, run: Run) -> dict[str, Any]:
    """Where a declared type lands for this run. A scope the run cannot fill (a `participant`
    memory in a run with no participant) is an `invalid-fact`: nothing is written."""
    project = str(run.project_id)
    scope = declaration.scope
    if scope == "participant":
        if not run.participant_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per participant, and this run has none.",
                details={"type": ["Declared scope participant; the run names no participant."]},
            )
        return {"project_id": project, "participant_id": run.participant_id}
    if scope == "user":
        if not run.user_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per user, and this run has none.",
                details={"type": ["Declared scope user; the run names no user."]},
            )
        return {"user_id": str(run.user_id)}
    if scope == "thread":
        if not run.thread_id:
            raise InvalidFact(
                f"Type {declaration.type!r} is remembered per thread, and this run has none.",
                details={"type": ["Declared scope thread; the run names no thread."]},
            )
        out = {"project_id": project, "thread_id": run.thread_id}
        if run.participant_id:
            out["participant_id"] = run.participant_id
        return out
    if scope == "same-project":
        return {"project_id": project}
    return {}  # tenant


def remember_fills(declaration: declarations.MemoryDeclaration, run: Run) -> bool:
    """Whether this run has a place for memories of the declared type (`remember_scope`)."""
    try:
        remember_scope(declaration, run)
    except InvalidFact:
        return False
    return True


def remember_subjects(run: Run) -> list[SubjectInput]:
    """Whom a remembered fact is about: the conversation's end user, else the run's user."""
    if run.participant_id:
        return [SubjectInput(kind=SubjectKind.PARTICIPANT, id=run.participant_id)]
    if run.user_id:
        return [SubjectInput(kind=SubjectKind.USER, id=str(run.user_id))]
    return []


def _check_text(text: str) -> str:
    limit = settings.REMEMBER_MAX_CHARS
    if not text.strip():
        raise InvalidFact("A memory needs some text.", details={"text": ["Empty."]})
    if len(text) > limit:
        raise InvalidFact(
            f"The text is {len(text)} characters; at most {limit} are accepted.",
            details={"text": [f"At most {limit} characters."], "limit": limit},
        )
    if "\x00" in text:
        raise InvalidFact(details={"text": ["NUL characters are not accepted."]})
    return text


@transaction.atomic
@memory_operation(
    "remember",
    before=lambda **kw: {
        "gen_ai.operation.name": "update_memory",
        "kindmem.memory.kind": "fact",
        "kindmem.memory.type": kw.get("type"),
    },
    after=lambda done: {
        "kindmem.remember.outcome": str(done.result.outcome.value),
        "kindmem.review.pending": done.approval is not None,
    },
)
def memory_remember(
    *,
    principal: Principal,
    type: str,
    text: str,
    tool_call_id: str,
    key: str | None = None,
    valid_until: datetime | None = None,
    step_id: str | None = None,
    source: Any = None,
    review_reasons: Sequence[str] = (),
) -> Remembered:
    """Write what an agent remembers and, when it must wait for a person, open its approval,
    in one transaction. `replayed` (with the approval the first call opened) when this run's
    tool call already wrote it; else `superseded` when the same agent filled the slot (type,
    key, scope) before, or `created`. When the memory supersedes a slot value still waiting
    for review, that older approval closes as `superseded` (the new value is reviewed on its
    own). Refused, writing nothing: an undeclared type, an empty or too long text, a
    `valid_until` in the past, a held person, a run over its memory limit.

    A caller that writes for the agent (extraction) may add `review_reasons` the memory waits
    for besides the detectors' (they never take one away) and a `source` (where it came from)."""
    if principal.kind != PrincipalKind.RUN or principal.run is None:
        raise Forbidden("Only an agent run remembers (a run token).")
    run = principal.run
    agent = run.agent
    declared = declarations.parse(agent.memory_declarations)
    declaration = declared.get(type)
    if declaration is None:
        raise InvalidFact(
            f"Agent {agent.agent_id!r} does not declare memories of type {type!r}.",
            details={"type": ["Not declared."], "declared": sorted(declared)},
        )
    text = _check_text(text)
    now = timezone.now()
    if valid_until is not None and valid_until <= now:
        raise InvalidFact(details={"valid_until": ["Must be in the future."]})
    content: dict[str, Any] = {"text": text}
    if key is not None:
        content["key"] = key
    needed = gate.write_gate(
        principal=principal,
        content=content,
        labels=[source],
        identifiers=[step_id, tool_call_id],
        wide_scope=declaration.is_wide,
        also=review_reasons,
    )
    reasons, findings = needed.reasons, needed.findings
    check_content(
        [declaration.schema, type_content_schema(principal.tenant_id, type)], content, type=type
    )
    result = slot_write(
        principal=principal,
        type=type,
        key=key,
        scope=remember_scope(declaration, run),
        subjects=remember_subjects(run),
        content=content,
        window_days=declaration.keep_days,
        must_wait=bool(reasons),
        tool_call_id=tool_call_id,
        valid_until=valid_until,
        step_id=step_id,
        source=source,
    )
    if result.outcome in (SlotOutcome.REPLAYED, SlotOutcome.UNCHANGED):
        return Remembered(result, Approval.objects.filter(revision=result.revision).first())
    if result.verified_slot:
        reasons = [*reasons, VERIFIED_SLOT]
    if result.asserted_slot:
        reasons = [*reasons, ASSERTED_OVERWRITE]
    if result.withdrawn:
        Approval.objects.filter(
            revision__in=result.withdrawn, status=ApprovalStatus.PENDING
        ).update(
            status=ApprovalStatus.SUPERSEDED,
            decided_at=now,
            decided_by=f"{result.revision.attributed_kind}:{result.revision.attributed_id}",
        )
    approval = None
    if reasons:
        approval = approval_open(
            principal=principal,
            revision=result.revision,
            reasons=reasons,
            findings=findings,
            now=now,
        )
    return Remembered(result, approval, reasons=reasons, findings=findings)
