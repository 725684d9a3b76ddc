"""What extraction costs: the tokens the provider counted, per tenant, agent and UTC day
(`ExtractionUsage`) and per conversation (`ConversationExtraction.tokens`), and the caps on
them (`extraction-quota`, 429).

A cap is checked before a job is queued and again before its model call; the tokens are known
only after the call, so a tenant may pass its cap by one call, which the prompt's bounds keep
small (settings: KINDMEM_EXTRACTION_MAX_MESSAGES, _MESSAGE_CHARS, _MAX_MEMORIES).
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from api.errors import ExtractionQuota
from extraction.models import ConversationExtraction, ExtractionUsage


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
