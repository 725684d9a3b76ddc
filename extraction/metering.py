"""What extraction costs: the tokens the provider counted, per tenant, agent and UTC day
(`ExtractionUsage`) and per conversation (`ConversationExtraction.tokens`), and the caps on
them (`extraction-quota`, 429).

A cap is checked before a job is queued and again before its model call; the tokens are known
only after the call, so a tenant may pass its cap by one call, which the prompt's bounds keep
small (settings: KINDMEM_EXTRACTION_MAX_MESSAGES, _MESSAGE_CHARS, _MAX_MEMORIES).

The counts are the model server's (`usage`), and a server may report anything: a count that is
missing is estimated from the characters (said so: `usage_estimated`); one that is invalid
(negative, not an integer, more than MAX_CALL_TOKENS) is not believed either: the call is
metered at the estimate, and the job fails `model-failed` (`usage_counted`, the runner), so a
broken server neither crashes the task nor empties or overflows the meter.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from api.errors import ExtractionQuota
from extraction.models import ConversationExtraction, ExtractionUsage

# The most tokens one call may be believed to count, in or out: the prompt's bounds keep a real
# call orders of magnitude below it, and the job's counters (4-byte integers) far from overflow.
MAX_CALL_TOKENS = 10_000_000


@dataclass(frozen=True)
class Usage:
    """The tokens a call is metered for, and why they are not the server's own, if they are not."""

    tokens_in: int
    tokens_out: int
    estimated: bool = False
    invalid: str | None = None  # what was wrong with the reported counts: the job fails


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def usage_counted(reported_in: object, reported_out: object, *, asked: str, answer: str) -> Usage:
    """What a call counts: the server's `prompt_tokens` and `completion_tokens` when both are
    integers in 0..MAX_CALL_TOKENS, else the estimate from the characters asked and answered
    (about four a token), with `invalid` saying what was wrong unless the counts were just
    missing (many local servers report none)."""
    if reported_in is None or reported_out is None:
        return Usage(_estimate(asked), _estimate(answer), estimated=True)
    faults = [
        f"{name} {value!r}"[:80]
        for name, value in (("prompt_tokens", reported_in), ("completion_tokens", reported_out))
        if type(value) is not int or not 0 <= value <= MAX_CALL_TOKENS  # bool is not a count
    ]
    if faults:
        invalid = f"The model's server reported invalid usage: {', '.join(faults)}."
        return Usage(_estimate(asked), _estimate(answer), estimated=True, invalid=invalid)
    assert isinstance(reported_in, int)
    assert isinstance(reported_out, int)
    return Usage(reported_in, reported_out)


def usage_day(now: datetime | None = None) -> date:
    """The UTC day a call's tokens count on (the daily cap's day)."""
    return (now or timezone.now()).astimezone(UTC).date()


def _seconds_to_next_day(now: datetime) -> int:
    tomorrow = datetime.combine(usage_day(now) + timedelta(days=1), datetime.min.time(), UTC)
    return max(1, int((tomorrow - now).total_seconds()))


def quota_check(*, tenant_id: uuid.UUID, mark: ConversationExtraction) -> None:
    """`extraction-quota` when the tenant's tokens today or the conversation's (`mark`, its
    watermark row) have reached their cap (0: no cap)."""
    now = timezone.now()
    daily = settings.EXTRACTION_TENANT_DAILY_TOKENS
    if daily:
        spent = ExtractionUsage.objects.of_tenant(tenant_id).tokens_on(usage_day(now))
        if spent >= daily:
            raise ExtractionQuota(
                f"This tenant's extraction tokens for today ({daily}) are spent.",
                details={"cap": "tenant-daily", "limit": daily, "spent": spent},
                retry_after=_seconds_to_next_day(now),
            )
    per_conversation = settings.EXTRACTION_CONVERSATION_TOKENS
    if per_conversation and mark.tokens >= per_conversation:
        raise ExtractionQuota(
            f"This conversation's extraction tokens ({per_conversation}) are spent.",
            details={"cap": "conversation", "limit": per_conversation, "spent": mark.tokens},
        )


@transaction.atomic
def usage_add(
    *,
    tenant_id: uuid.UUID,
    agent_id: uuid.UUID,
    conversation_id: uuid.UUID,
    tokens_in: int,
    tokens_out: int,
) -> None:
    """Count one model call's tokens for its tenant, agent and day, and its conversation."""
    day = usage_day()
    row = ExtractionUsage.objects.filter(tenant_id=tenant_id, agent_id=agent_id, day=day)
    added = {
        "calls": F("calls") + 1,
        "tokens_in": F("tokens_in") + tokens_in,
        "tokens_out": F("tokens_out") + tokens_out,
    }
    if not row.update(**added):
        try:
            with transaction.atomic():
                ExtractionUsage.objects.create(
                    tenant_id=tenant_id,
                    agent_id=agent_id,
                    day=day,
                    calls=1,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                )
        except IntegrityError:  # another call of the agent made today's row first
            row.update(**added)
    ConversationExtraction.objects.filter(conversation_id=conversation_id).update(
        tokens=F("tokens") + tokens_in + tokens_out, updated_at=timezone.now()
    )
