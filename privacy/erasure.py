"""Running an erasure: steps, batches, progress, receipt.

Each app that holds personal data erases it in its own module, as a *step*: a function that
erases one batch about the target and says whether anything is left. The runner calls each
step until it is done, one batch per transaction, and records the progress in the same
transaction as the batch, so a worker killed at any point resumes exactly after the last
committed batch. Two workers running the same erasure serialize on the request's row lock.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from api.errors import ValidationFailed
from api.tracing import memory_operation
from approvals import erasure as approvals_erasure
from audit.models import AuditEvent
from audit.services import audit_subject_scrub
from facts import erasure as facts_erasure
from kindmem import services as kindmem_services
from kindmem import threads
from kindmem.erasure import HELD_SHOWN, BatchResult, ErasureStep, ErasureTarget, StepPreview
from kindmem.subjects import Subject
from privacy import exports
from privacy.models import UNFINISHED, ErasureRequest, RequestStatus
from recall import erasure as recall_erasure
from runlog import erasure as runlog_erasure
from webhooks import erasure as webhooks_erasure
from webhooks.models import EventKind
from webhooks.outbox import outbox_record

logger = logging.getLogger(__name__)


def batch_size() -> int:
    """Rows per batch (KINDMEM_ERASURE_BATCH_SIZE); small in the crash tests."""
    return settings.ERASURE_BATCH_SIZE


class _AuditStep:
    """The audit scrub, last: no step's work then leaves an audit event naming the person."""

    @staticmethod
    def erase_batch(target: ErasureTarget, limit: int) -> BatchResult:
        scrubbed = audit_subject_scrub(tenant_id=target.tenant_id, subject=target.subject)
        # One item per event scrubbed, so the receipt counts events (the digest covers it).
        return BatchResult(erased=["audit-event:scrubbed"] * scrubbed, done=True)

    @staticmethod
    def preview(target: ErasureTarget) -> StepPreview:
        # The events about the person (what "who read my data" lists); the scrub also takes
        # the id out of other events' query texts, which a preview does not search.
        events = AuditEvent.objects.of_tenant(target.tenant_id).about_subject(str(target))
        return StepPreview(counts={"audit-event": events.count()})


# The steps, in order (each app's `erasure` module, imported: none is found by name).
# Approvals first: they describe revisions the facts step deletes (and name reviewers' notes).
STEPS: list[tuple[str, ErasureStep]] = [
    ("approvals", approvals_erasure),
    ("facts", facts_erasure),
    ("recall", recall_erasure),
    ("run-log", runlog_erasure),
    ("threads", threads),
    ("exports", exports),
    ("webhooks", webhooks_erasure),
    ("audit", _AuditStep),
]


@dataclass(frozen=True)
class ErasurePreview:
    """What erasing `subject` would do now, written nowhere: rows per kind (the receipt's
    `counts_by_kind` kinds), the items legal hold would keep, the erasure already under way
    (starting again answers it) and the finished erasures of the same subject (found by
    their target reference, since they forgot the id)."""

    subject: Subject
    counts: dict[str, int]
    held: list[dict[str, Any]]
    held_count: int
    unfinished: ErasureRequest | None
    erased_before: list[ErasureRequest]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def nothing_matches(self) -> bool:
        """Nothing in the tenant is about this id: often a typo, which an erasure would
        "complete" with every count at zero."""
        return self.total == 0 and self.held_count == 0


def _steps_preview(target: ErasureTarget) -> StepPreview:
    """Every step's preview, added up per kind."""
    counts: dict[str, int] = {}
    held: list[dict[str, Any]] = []
    held_count = 0
    for _name, step in STEPS:
        found = step.preview(target)
        for kind, count in found.counts.items():
            counts[kind] = counts.get(kind, 0) + count
        held += found.held
        held_count += found.held_count
    return StepPreview(
        counts=dict(sorted(counts.items())), held=held[:HELD_SHOWN], held_count=held_count
    )


def erasure_preview(*, tenant_id: uuid.UUID, subject: Subject) -> ErasurePreview:
    """The one preview of an erasure, for the console's start page and `POST /v1/erasures?
    dry_run=true`: each step's `preview` (a few counting queries each) and the erasures of
    the same subject; nothing is written."""
    target = ErasureTarget(tenant_id, subject.kind, subject.id)
    steps = _steps_preview(target)
    erasures = list(
        ErasureRequest.objects.of_subject(tenant_id, target.subject).order_by("created_at")
    )
    unfinished = [e for e in erasures if e.status in UNFINISHED]
    return ErasurePreview(
        subject=target.subject,
        counts=steps.counts,
        held=steps.held,
        held_count=steps.held_count,
        unfinished=unfinished[0] if unfinished else None,
        erased_before=[e for e in reversed(erasures) if e.status == RequestStatus.COMPLETED],
    )


def erasure_estimate(target: ErasureTarget) -> int:
    """How many rows the steps expect to erase: the progress bar's total."""
    return sum(_steps_preview(target).counts.values())


def _digest(previous: str, erased: list[str]) -> str:
    hasher = hashlib.sha256(previous.encode())
    for item in sorted(erased):
        hasher.update(b"\n" + item.encode())
    return hasher.hexdigest()


def _refuse_invalid_target(erasure_id: uuid.UUID) -> bool:
    """A request stored before its target was validated (a user id that is no UUID) can never
    finish: fail it and lift its hold, rather than resume it forever. True if it was."""
    request = ErasureRequest.objects.filter(pk=erasure_id).first()
    if request is None or request.status not in UNFINISHED:
        return False
    try:
        Subject.parse(request.target_kind, request.target_id)
    except ValidationFailed as exc:
        with transaction.atomic():
            ErasureRequest.objects.filter(pk=erasure_id).update(
                status=RequestStatus.FAILED, error=exc.message, finished_at=timezone.now()
            )
            kindmem_services.holds_release(erasure_id=erasure_id)
        return True
    return False


def erasure_claim(erasure_id: uuid.UUID) -> ErasureRequest | None:
    """Mark the erasure running (from pending or running: a resume); None if it is finished
    or can never run."""
    if _refuse_invalid_target(erasure_id):
        return None
    now = timezone.now()
    claimed = ErasureRequest.objects.filter(pk=erasure_id, status__in=UNFINISHED).update(
        status=RequestStatus.RUNNING, attempts=F("attempts") + 1, heartbeat_at=now
    )
    if claimed != 1:
        return None
    ErasureRequest.objects.filter(pk=erasure_id, started_at__isnull=True).update(started_at=now)
    request = ErasureRequest.objects.get(pk=erasure_id)
    if not request.progress.get("steps"):
        # Only before the first batch: once rows go, a new estimate would count less.
        target = ErasureTarget(request.tenant_id, request.target_kind, request.target_id)
        ErasureRequest.objects.filter(pk=erasure_id).update(total_estimate=erasure_estimate(target))
        request.refresh_from_db()
    return request


def _erasure_told(done: ErasureRequest | None) -> dict[str, Any]:
    if done is None:
        return {}
    counts = (done.receipt or {}).get("counts_by_kind", {})
    return {
        "kindmem.erasure.target_kind": done.target_kind,
        "kindmem.erasure.status": done.status,
        "kindmem.erasure.records": sum(counts.values()),
    }


@memory_operation(
    "erasure",
    before=lambda **_: {"gen_ai.operation.name": "delete_memory", "kindmem.memory.kind": "erasure"},
    after=_erasure_told,
)
def erasure_run(*, erasure_id: uuid.UUID, limit: int | None = None) -> ErasureRequest | None:
    """Run (or resume) an erasure to the end. Safe to call twice, or concurrently."""
    limit = limit or batch_size()
    request = erasure_claim(erasure_id)
    if request is None:
        return None
    target = ErasureTarget(request.tenant_id, request.target_kind, request.target_id)
    for name, eraser in STEPS:
        while True:
            with transaction.atomic():
                request = ErasureRequest.objects.select_for_update().get(
                    tenant_id=target.tenant_id, pk=erasure_id
                )
                if request.status != RequestStatus.RUNNING:
                    return request  # another worker finished it
                step = request.progress.setdefault("steps", {}).setdefault(
                    name, {"done": False, "count": 0}
                )
                if step["done"]:
                    break
                result = eraser.erase_batch(target, limit)
                step["count"] += len(result.erased)
                kinds = step.setdefault("kinds", {})
                for item in result.erased:
                    kind = item.partition(":")[0]
                    kinds[kind] = kinds.get(kind, 0) + 1
                step["done"] = result.done
                if result.done:
                    step["held"] = result.held
                request.progress["digest"] = _digest(
                    request.progress.get("digest", ""), result.erased
                )
                request.heartbeat_at = timezone.now()
                request.save(update_fields=["progress", "heartbeat_at"])
            if settings.ERASURE_BATCH_PAUSE_MS:
                # Outside the transaction: spreads a large erasure's load on a busy database.
                time.sleep(settings.ERASURE_BATCH_PAUSE_MS / 1000)
    return _erasure_finish(target.tenant_id, erasure_id)


def _counts_by_kind(steps_progress: dict[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for step in steps_progress.values():
        for kind, count in step.get("kinds", {}).items():
            totals[kind] = totals.get(kind, 0) + count
    return dict(sorted(totals.items()))


@transaction.atomic
def _erasure_finish(tenant_id: uuid.UUID, erasure_id: uuid.UUID) -> ErasureRequest:
    request = ErasureRequest.objects.select_for_update().get(tenant_id=tenant_id, pk=erasure_id)
    if request.status != RequestStatus.RUNNING:
        return request
    now = timezone.now()
    steps_progress = request.progress.get("steps", {})
    request.receipt = {
        "erasure_id": str(request.id),
        "target_kind": request.target_kind,
        "target_reference": request.target_reference,
        "reason": request.reason,
        "requested_by": request.requested_by,
        "started_at": request.started_at.isoformat() if request.started_at else None,
        "finished_at": now.isoformat(),
        "counts": {name: step.get("count", 0) for name, step in steps_progress.items()},
        "counts_by_kind": _counts_by_kind(steps_progress),
        "held": [item for step in steps_progress.values() for item in step.get("held", [])],
        "digest": request.progress.get("digest", _digest("", [])),
        "digest_algorithm": "sha256 chained over the sorted erased ids of each batch",
    }
    request.status = RequestStatus.COMPLETED
    request.finished_at = now
    request.target_id = ""  # the receipt outlives the data and names no one
    request.save()
    outbox_record(  # ids and counts only: the person is the one thing it may not name
        tenant_id=request.tenant_id,
        kind=EventKind.ERASURE_COMPLETED,
        ordering_key=f"erasure:{request.id}",
        data={
            "erasure_id": str(request.id),
            "target_kind": request.target_kind,
            "counts_by_kind": request.receipt["counts_by_kind"],
        },
    )
    kindmem_services.holds_release(erasure_id=request.id)
    return request
