"""Running one extraction job: claim it, read what the model is shown, ask the model, meter
the tokens, check the answer, and apply its decisions in one transaction, or refuse it whole.

1. **Claim** by a conditional UPDATE (`queued` -> `running`, or a `running` job whose worker
   outlived the task's hard time limit). A duplicated or retried message that finds the job
   claimed or finished does nothing; `attempts` is the claim's token, so a worker that lost its
   claim to a resumed one writes nothing when it comes back.
2. **Read** the range's messages (user and agent; tool messages are never shown), the agent's
   declared types that the job's run has a place for, and the memories the job's run may read
   (`extraction.memories`). The run is one whoever asked could have minted
   (`kindmem.services.acting_for`), so that is never more than the asker may read and write
   itself. Nothing is extracted about a person an erasure holds.
3. **Ask** the model (outside any transaction: no lock waits on the network), and count the
   tokens it reports, whatever the answer turns out to be; counts that cannot be right are
   metered at the estimate and fail the job (`model-failed`, `extraction.metering`).
4. **Check** the answer (`extraction.answers`); **apply** every decision through the writes
   an agent's own memories take (`remember` for an add, `fact_propose` for an update: always a
   proposed supersede for a reviewer), the decisions' rows (one per (conversation, range,
   decision): a unique key) and the watermark in one transaction. A write that is refused
   (a held person, a type's schema) rolls all of it back: the job is refused, recorded, and
   its range may be extracted again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from api.errors import ErasureInProgress, ExtractionQuota, ExtractionUnavailable, KindmemError
from approvals.remember import memory_remember, remember_fills
from audit.models import Outcome, Phase
from audit.services import AuditNote, audit_record
from extraction.answers import MODEL_REFUSAL, TRUNCATED, Checked, Decision, Refused, answer_check
from extraction.jobs import job_open, watermark_lock
from extraction.memories import memories_for
from extraction.metering import quota_check, usage_add
from extraction.models import (
    Action,
    ConversationExtraction,
    DecisionOutcome,
    ExtractionDecision,
    ExtractionJob,
    ExtractionSettings,
    JobStatus,
)
from extraction.prompt import PROMPT_VERSION, SCHEMA_NAME, Prompt, ShownMessage, prompt_build
from extraction.provider import ChatFailed, Completion, get_provider
from facts.review import CONTRADICTION, EXTRACTED
from facts.services import Outcome as WriteOutcome
from facts.services import fact_propose
from facts.slots import SlotOutcome
from kindmem import declarations
from kindmem.access import Principal, PrincipalKind
from kindmem.holds import held_subjects
from kindmem.services import Acting
from kindmem.subjects import persons_of
from recall.models import Conversation, Message, Role, message_ref
from webhooks.models import EventKind
from webhooks.outbox import outbox_record

logger = logging.getLogger(__name__)

ENDPOINT = "TASK extract_conversation"
STALE = "stale"
NO_TYPES = "no-declared-types"
MODEL_FAILED = "model-failed"


@dataclass(frozen=True)
class Work:
    """What a claimed job works with."""

    principal: Principal  # the job's run
    prompt: Prompt
    review_all: bool


def extraction_run(*, job_id: str) -> str | None:
    """Run the job `job_id` (see the module docstring); safe to call twice. The id of the
    conversation's next job, when messages remain past this one's range (the caller queues
    it), else None."""
    job = _claim(job_id)
    if job is None:
        return None
    try:
        work = _prepare(job)
    except Refused as refused:
        _finish(job, JobStatus.REFUSED, refused.code, refused.message)
        return None
    completion: Completion | None = None
    checked = Checked(decisions=[], nothing=0)
    if work.prompt.messages:  # a range of tool messages only has nothing to ask about
        provider = get_provider()
        if provider is None:
            _finish(job, JobStatus.FAILED, ExtractionUnavailable.code, "No chat model is set.")
            return None
        try:
            completion = provider.complete(
                system=work.prompt.system,
                user=work.prompt.user,
                schema=work.prompt.schema,
                schema_name=SCHEMA_NAME,
            )
        except ChatFailed as exc:
            _finish(job, JobStatus.FAILED, MODEL_FAILED, str(exc))
            return None
        _metered(job, completion)
        if completion.usage_invalid:  # metered at the estimate; the server is not believed
            _finish(job, JobStatus.FAILED, MODEL_FAILED, completion.usage_invalid, completion)
            return None
        try:
            checked = _checked(completion, work.prompt)
        except Refused as refused:
            _finish(job, JobStatus.REFUSED, refused.code, refused.message, completion)
            return None
    try:
        return _apply(job, work, completion, checked)
    except Refused as refused:
        _finish(job, JobStatus.REFUSED, refused.code, refused.message, completion)
        return None


def _claim(job_id: str) -> ExtractionJob | None:
    try:
        ident = uuid.UUID(str(job_id))
    except ValueError:
        return None
    now = timezone.now()
    # A running job's worker is surely gone once the task's hard time limit has passed.
    lost = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    claimed = (
        ExtractionJob.objects.filter(pk=ident)
        .filter(Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, started_at__lt=lost))
        .update(status=JobStatus.RUNNING, started_at=now, attempts=F("attempts") + 1)
    )
    if claimed != 1:
        return None
    return ExtractionJob.objects.select_related(
        "conversation", "run__agent", "run__project", "run__user"
    ).get(pk=ident)


def _prepare(job: ExtractionJob) -> Work:
    run = job.run
    principal = Principal(kind=PrincipalKind.RUN, tenant_id=job.tenant_id, run=run, user=run.user)
    conversation = job.conversation
    persons = persons_of(
        participant_id=conversation.participant_id,
        user_id=conversation.user_id,
        thread_id=conversation.thread_id,
    )
    if held_subjects(job.tenant_id, persons):
        raise Refused(
            ErasureInProgress.code,
            "An erasure of this person or conversation is in progress; nothing is extracted.",
        )
    declared = declarations.parse(run.agent.memory_declarations)
    if not declared:
        raise Refused(NO_TYPES, f"Agent {run.agent.agent_id!r} declares no memory types.")
    # Only the types this run has a place for are offered: a person's own type (scope `user`)
    # is not, when whoever asked does not stand for that person (an app, for a Kindgi user).
    declared = {t: d for t, d in declared.items() if remember_fills(d, run)}
    if not declared:
        raise Refused(
            NO_TYPES,
            f"None of agent {run.agent.agent_id!r}'s memory types has a place in this "
            "conversation for the credential that asked.",
        )
    mark = ConversationExtraction.objects.get(conversation=conversation)
    try:
        quota_check(tenant_id=job.tenant_id, mark=mark)
    except ExtractionQuota as exc:
        raise Refused(exc.code, exc.message) from exc
    messages = [
        ShownMessage(sequence=m.sequence, role=m.role, text=m.text)
        for m in Message.objects.of_tenant(job.tenant_id)
        .filter(conversation=conversation)
        .filter(sequence__gte=job.first_sequence, sequence__lte=job.last_sequence)
        .exclude(role=Role.TOOL)
        .order_by("sequence")
        .only("sequence", "role", "text")
    ]
    memories = (
        memories_for(principal=principal, types=sorted(declared), messages=messages)
        if messages
        else []
    )
    prompt = prompt_build(
        declared=declared,
        messages=messages,
        memories=memories,
        message_chars=settings.EXTRACTION_MESSAGE_CHARS,
    )
    review_all = (
        ExtractionSettings.objects.filter(tenant_id=job.tenant_id)
        .values_list("review_all", flat=True)
        .first()
    )
    return Work(principal=principal, prompt=prompt, review_all=bool(review_all))


@transaction.atomic
def _metered(job: ExtractionJob, completion: Completion) -> None:
    """The call's tokens on the job and in the meter, in their own transaction: a call is paid
    for whatever happens to its answer."""
    usage_add(
        tenant_id=job.tenant_id,
        agent_id=job.agent_id,
        conversation_id=job.conversation_id,
        tokens_in=completion.tokens_in,
        tokens_out=completion.tokens_out,
    )
    ExtractionJob.objects.filter(pk=job.pk).update(
        model=completion.model[:200],
        prompt_version=PROMPT_VERSION,
        response_format=completion.response_format,
        tokens_in=F("tokens_in") + completion.tokens_in,
        tokens_out=F("tokens_out") + completion.tokens_out,
        usage_estimated=completion.usage_estimated,
    )


def _checked(completion: Completion, prompt: Prompt) -> Checked:
    if completion.refusal:
        raise Refused(MODEL_REFUSAL, f"The model refused: {completion.refusal[:300]}")
    if completion.truncated:
        raise Refused(TRUNCATED, "The model's answer was cut off (finish_reason length).")
    return answer_check(
        completion.text,
        prompt,
        max_decisions=settings.EXTRACTION_MAX_DECISIONS,
        max_chars=settings.REMEMBER_MAX_CHARS,
    )


@transaction.atomic
def _apply(
    job: ExtractionJob, work: Work, completion: Completion | None, checked: Checked
) -> str | None:
    locked = (
        ExtractionJob.objects.select_for_update()
        .filter(tenant_id=job.tenant_id, pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts)
        .first()
    )
    if locked is None:
        return None  # a resumed worker claimed it since: its run decides
    conversation = job.conversation
    mark = watermark_lock(conversation)
    if mark.extracted_through != job.first_sequence - 1:
        raise Refused(
            STALE,
            f"The conversation was extracted through message {mark.extracted_through} "
            f"meanwhile; this job starts at {job.first_sequence}.",
        )
    model = completion.model if completion else ""
    rows: list[ExtractionDecision] = []
    for decision in checked.decisions:
        try:
            rows.append(_write(job, work, decision, model))
        except KindmemError as exc:
            raise Refused(exc.code, f"Decision {decision.index + 1}: {exc.message}") from exc
    ExtractionDecision.objects.bulk_create(rows)
    now = timezone.now()
    mark.extracted_through = job.last_sequence
    mark.updated_at = now
    mark.save(update_fields=["extracted_through", "updated_at"])
    ExtractionJob.objects.filter(pk=job.pk).update(
        status=JobStatus.APPLIED, finished_at=now, decisions_none=checked.nothing
    )
    outbox_record(  # ids and counts; the facts it wrote announce themselves (fact.changed)
        tenant_id=job.tenant_id,
        kind=EventKind.EXTRACTION_APPLIED,
        ordering_key=f"conversation:{conversation.pk}",
        data={
            "job_id": str(job.pk),
            "conversation_id": str(conversation.pk),
            "decisions": {
                outcome: sum(1 for row in rows if row.outcome == outcome)
                for outcome in DecisionOutcome.values
            },
            "fact_ids": sorted({str(row.fact_id) for row in rows if row.fact_id}),
        },
    )
    note = _audit_note(job, completion)
    note.touch(ids=[i for row in rows for i in (row.fact_id, row.revision_id)])
    note.query_snapshot["decisions"] = {
        outcome: sum(1 for row in rows if row.outcome == outcome)
        for outcome in DecisionOutcome.values
    }
    note.query_snapshot["decisions"]["none"] = checked.nothing
    audit_record(principal=work.principal, note=note, outcome=Outcome.SUCCESS, endpoint=ENDPOINT)
    last_sequence = Conversation.objects.filter(pk=conversation.pk).values_list(
        "last_sequence", flat=True
    )
    if last_sequence.get() <= job.last_sequence:
        return None
    try:  # the rest of a long conversation, in the next job
        opened = job_open(  # as this job's run: what its asker stood for
            conversation=conversation, acting=Acting.of_run(job.run), requested_by=f"after:{job.id}"
        )
    except ExtractionQuota:
        return None
    return str(opened.job.id) if opened.created and opened.job is not None else None


def _write(job: ExtractionJob, work: Work, decision: Decision, model: str) -> ExtractionDecision:
    """One decision, written as the job's run: `remember` for an add, `fact_propose` for an
    update; what it wrote as the decision's row (not saved yet)."""
    conversation = job.conversation
    thread = conversation.thread_id
    source = {
        "kind": "extraction",
        "ref": f"{thread}#{job.first_sequence}-{job.last_sequence}",
        "model": model,
        "prompt_version": PROMPT_VERSION,
        "derived_from": [message_ref(thread, s) for s in decision.cited],
        "extraction_id": str(job.id),
    }
    step_id = f"extraction {PROMPT_VERSION} {model}"[:200]
    tool_call_id = f"extraction:{job.id}:{decision.index}"
    extra = [EXTRACTED] if work.review_all else []
    row = ExtractionDecision(
        tenant_id=job.tenant_id,
        job=job,
        conversation=conversation,
        first_sequence=job.first_sequence,
        last_sequence=job.last_sequence,
        index=decision.index,
        action=decision.action,
        type=decision.type,
        text=decision.text,
        cited=list(decision.cited),
    )
    if decision.action == Action.ADD:
        remembered = memory_remember(
            principal=work.principal,
            type=decision.type,
            text=decision.text,
            tool_call_id=tool_call_id,
            step_id=step_id,
            source=source,
            review_reasons=extra,
        )
        revision = remembered.result.revision
        row.fact_id, row.revision_id = revision.fact_id, revision.pk
        if remembered.result.outcome == SlotOutcome.UNCHANGED:
            # the person's memory already holds it (`facts.slots.same_value`): nothing added
            row.outcome = DecisionOutcome.UNCHANGED
            return row
        row.outcome = DecisionOutcome.CREATED
        row.approval_id = remembered.approval.id if remembered.approval else None
        row.reasons = list(remembered.reasons)
        return row
    assert decision.memory_id is not None
    memory = work.prompt.memories[decision.memory_id]
    content: Any = (
        {**memory.content, "text": decision.text}
        if isinstance(memory.content, dict)
        else decision.text
    )
    result = fact_propose(
        principal=work.principal,
        fact_id=memory.fact_id,
        content=content,
        reasons=[CONTRADICTION, *extra],
        window_days=work.prompt.declared[memory.type].keep_days,
        source=source,
        step_id=step_id,
        tool_call_id=tool_call_id,
    )
    row.fact_id, row.revision_id = result.revision.fact_id, result.revision.pk
    row.replaces_revision_id = uuid.UUID(memory.revision_id)
    if result.outcome == WriteOutcome.UNCHANGED:
        row.outcome = DecisionOutcome.UNCHANGED
        return row
    row.outcome = DecisionOutcome.PROPOSED
    row.approval_id, row.reasons = result.approval_id, list(result.reasons)
    return row


def _audit_note(job: ExtractionJob, completion: Completion | None) -> AuditNote:
    conversation = job.conversation
    note = AuditNote(phase=Phase.WRITE, kind="fact")
    note.touch(ids=[job.id])
    if conversation.participant_id:
        note.touch(subjects=[("participant", conversation.participant_id)])
    elif conversation.user_id:
        note.touch(subjects=[("user", str(conversation.user_id))])
    note.project_id = conversation.project_id
    note.query_snapshot = {
        "extraction_id": str(job.id),
        "conversation_id": conversation.thread_id,
        "first_sequence": job.first_sequence,
        "last_sequence": job.last_sequence,
        "model": completion.model if completion else None,
        "prompt_version": PROMPT_VERSION,
        "tokens_in": completion.tokens_in if completion else 0,
        "tokens_out": completion.tokens_out if completion else 0,
    }
    return note


@transaction.atomic
def _finish(
    job: ExtractionJob,
    status: str,
    code: str,
    message: str,
    completion: Completion | None = None,
) -> None:
    """A job refused or failed, as long as this worker still holds its claim: why, the answer
    that was refused (for the operator), and a failure event in the audit stream."""
    finished = ExtractionJob.objects.filter(
        pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts
    ).update(
        status=status,
        error_code=code[:50],
        error=message[:2000],
        answer=completion.text if completion is not None else "",
        finished_at=timezone.now(),
    )
    if not finished:
        return
    logger.info("extraction %s %s: %s %s", job.id, status, code, message)
    principal = Principal(
        kind=PrincipalKind.RUN, tenant_id=job.tenant_id, run=job.run, user=job.run.user
    )
    audit_record(
        principal=principal,
        note=_audit_note(job, completion),
        outcome=Outcome.FAILURE,
        endpoint=ENDPOINT,
        error_code=code,
        error=message,
    )
