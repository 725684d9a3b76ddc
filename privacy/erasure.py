"""Running an erasure: steps, batches, progress, receipt.

Each app that holds personal data erases it in its own module, as a *step*: a function that
erases one batch about the target and says whether anything is left. The runner calls each
step until it is done, one batch per transaction, and records the progress in the same
transaction as the batch, so a worker killed at any point resumes exactly after the last
committed batch. Two workers running the same erasure serialize on the request's row lock.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.services import audit_subject_scrub
from kindmem.models import ErasureHold, SubjectKind
from privacy.models import ErasureRequest, RequestStatus

logger = logging.getLogger(__name__)


def batch_size() -> int:
    """Rows per batch (KINDMEM_ERASURE_BATCH_SIZE); small in the crash tests."""
    return settings.ERASURE_BATCH_SIZE


@dataclass(frozen=True)
class ErasureTarget:
    tenant_id: uuid.UUID
    kind: str  # a SubjectKind
    id: str

    @property
    def subject(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass
class BatchResult:
    erased: list[str]  # "<kind>:<id>" of the rows erased by this batch
    done: bool  # nothing left for this step
    held: list[dict[str, Any]] = field(default_factory=list)  # kept, and why (legal hold)


EraseBatch = Callable[[ErasureTarget, int], BatchResult]


def _audit_step(target: ErasureTarget, limit: int) -> BatchResult:
    if target.kind == SubjectKind.CONVERSATION:
        return BatchResult(erased=[], done=True)
    scrubbed = audit_subject_scrub(tenant_id=target.tenant_id, subject=target.subject)
    # One item per event scrubbed, so the receipt counts events (the digest covers the count).
    return BatchResult(erased=["audit-event:scrubbed"] * scrubbed, done=True)


# The steps, in order: (name, dotted path of the module's `erase_batch`). The audit scrub
# comes last so that no step's work leaves an audit event naming the person behind.
STEP_PATHS: list[tuple[str, str]] = [
    # approvals first: they describe revisions the facts step deletes (and name reviewers' notes)
    ("approvals", "approvals.erasure.erase_batch"),
    ("facts", "facts.erasure.erase_batch"),
    ("recall", "recall.erasure.erase_batch"),
    ("run-log", "runlog.erasure.erase_batch"),
    ("exports", "privacy.exports.erase_batch"),
]


def steps() -> list[tuple[str, EraseBatch]]:
    resolved: list[tuple[str, EraseBatch]] = []
    for name, path in STEP_PATHS:
        module, _, attribute = path.rpartition(".")
        resolved.append((name, getattr(importlib.import_module(module), attribute)))
    return [*resolved, ("audit", _audit_step)]


def erasure_estimate(target: ErasureTarget) -> int:
    """How many rows the steps expect to erase: the progress bar's total. Steps may define
    `estimate(target)` next to their `erase_batch`."""
    total = 0
    for _name, path in STEP_PATHS:
        module = importlib.import_module(path.rpartition(".")[0])
        estimate = getattr(module, "estimate", None)
        if estimate is not None:
            total += estimate(target)
    return total


def _digest(previous: str, erased: list[str]) -> str:
    hasher = hashlib.sha256(previous.encode())
    for item in sorted(erased):
        hasher.update(b"\n" + item.encode())
    return hasher.hexdigest()


def erasure_claim(erasure_id: uuid.UUID) -> ErasureRequest | None:
    """Mark the erasure running (from pending or running: a resume); None if it is finished."""
    now = timezone.now()
    claimed = ErasureRequest.objects.filter(
        pk=erasure_id, status__in=[RequestStatus.PENDING, RequestStatus.RUNNING]
    ).update(status=RequestStatus.RUNNING, attempts=F("attempts") + 1, heartbeat_at=now)
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


def erasure_run(*, erasure_id: uuid.UUID, limit: int | None = None) -> ErasureRequest | None:
    """Run (or resume) an erasure to the end. Safe to call twice, or concurrently."""
    limit = limit or batch_size()
    request = erasure_claim(erasure_id)
    if request is None:
        return None
    target = ErasureTarget(request.tenant_id, request.target_kind, request.target_id)
    for name, erase_batch in steps():
        while True:
            with transaction.atomic():
                request = ErasureRequest.objects.select_for_update().get(pk=erasure_id)
                if request.status != RequestStatus.RUNNING:
                    return request  # another worker finished it
                step = request.progress.setdefault("steps", {}).setdefault(
                    name, {"done": False, "count": 0}
                )
                if step["done"]:
                    break
                result = erase_batch(target, limit)
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
    return _erasure_finish(erasure_id)


def _counts_by_kind(steps_progress: dict[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for step in steps_progress.values():
        for kind, count in step.get("kinds", {}).items():
            totals[kind] = totals.get(kind, 0) + count
    return dict(sorted(totals.items()))


@transaction.atomic
def _erasure_finish(erasure_id: uuid.UUID) -> ErasureRequest:
    request = ErasureRequest.objects.select_for_update().get(pk=erasure_id)
    if request.status != RequestStatus.RUNNING:
        return request
    now = timezone.now()
    steps_progress = request.progress.get("steps", {})
    request.receipt = {
        "erasure_id": str(request.id),
        "target_kind": request.target_kind,
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
    ErasureHold.objects.filter(erasure_id=request.id).delete()
    return request
