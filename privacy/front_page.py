"""The console's front page, per role: what each person opens the console for.

- a **reviewer** (may view approvals): the queue (how many wait, the oldest, per reason, by
  age) and their own recent decisions;
- a **privacy officer** (or a superuser): open access requests and erasures with their
  progress, recently finished ones, and the buttons that start each, find a person, or check
  whether an id was erased;
- an **admin** (a superuser): the tenant's health: worker heartbeat, embedding backlog, the
  broker; and the full list of tables, which only they need.

Someone with several roles sees each of their panels. Every panel is a handful of aggregate
queries over the staff member's tenant (`console_scope`), whatever the size of the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Count, Max, Min, Q
from django.http import HttpRequest
from django.utils import timezone

from approvals.models import Approval, ApprovalStatus
from facts.models import EmbeddingState, Revision, SweepReport
from facts.review_reasons import REASONS
from kindmem.console import console_scope, principal_names
from kindmem.models import WorkerHeartbeat
from privacy.models import UNFINISHED, AccessRequest, ErasureRequest
from privacy.permissions import is_privacy_officer

RECENT = 8
OPEN = UNFINISHED
# The queue's age buckets: (label, lower bound).
AGE_BUCKETS = [
    ("under an hour", timedelta(0)),
    ("1 to 24 hours", timedelta(hours=1)),
    ("1 to 7 days", timedelta(days=1)),
    ("over a week", timedelta(days=7)),
]
# A worker is alive if it beat within this (the beat runs every minute).
WORKER_FRESH = timedelta(minutes=3)


@dataclass
class ReviewPanel:
    pending: int
    oldest: Any
    by_reason: list[tuple[str, int]]
    by_age: list[tuple[str, int]]
    decisions: list[Approval] = field(default_factory=list)

    @property
    def busiest_age(self) -> int:
        return max((n for _, n in self.by_age), default=0) or 1


@dataclass
class PrivacyPanel:
    open_erasures: list[ErasureRequest]
    open_access: list[AccessRequest]
    finished_erasures: list[ErasureRequest]
    finished_access: list[AccessRequest]
    names: dict[str, str]


@dataclass
class HealthPanel:
    worker_seen: Any
    workers_alive: int
    worker_ok: bool
    embedding_pending: int
    embedding_failed: int
    broker: dict[str, Any]
    last_sweep: SweepReport | None


def _review(request: HttpRequest) -> ReviewPanel:
    now = timezone.now()
    queue = console_scope(request, Approval.objects.all()).filter(status=ApprovalStatus.PENDING)
    buckets = {}
    for i, (_label, lower) in enumerate(AGE_BUCKETS):
        upper = AGE_BUCKETS[i + 1][1] if i + 1 < len(AGE_BUCKETS) else None
        when = Q(created_at__lte=now - lower)
        if upper is not None:
            when &= Q(created_at__gt=now - upper)
        buckets[f"age_{i}"] = Count("pk", filter=when)
    reasons = {
        f"reason_{i}": Count("pk", filter=Q(reasons__contains=[r])) for i, r in enumerate(REASONS)
    }
    found = queue.aggregate(pending=Count("pk"), oldest=Min("created_at"), **reasons, **buckets)
    decisions = list(
        console_scope(request, Approval.objects.all())
        .filter(decided_by_user_id=request.user.pk, decided_at__isnull=False)
        .select_related("revision__fact")
        .order_by("-decided_at")[:RECENT]
    )
    return ReviewPanel(
        pending=found["pending"],
        oldest=found["oldest"],
        by_reason=[(r, found[f"reason_{i}"]) for i, r in enumerate(REASONS)],
        by_age=[(label, found[f"age_{i}"]) for i, (label, _) in enumerate(AGE_BUCKETS)],
        decisions=decisions,
    )


def _privacy(request: HttpRequest) -> PrivacyPanel:
    erasures = console_scope(request, ErasureRequest.objects.select_related("tenant"))
    access = console_scope(request, AccessRequest.objects.select_related("tenant")).defer(
        "export_json", "export_zip"
    )
    open_erasures = list(erasures.filter(status__in=OPEN).order_by("created_at")[:20])
    open_access = list(access.filter(status__in=OPEN).order_by("created_at")[:20])
    finished_erasures = list(erasures.exclude(status__in=OPEN).order_by("-created_at")[:RECENT])
    finished_access = list(access.exclude(status__in=OPEN).order_by("-created_at")[:RECENT])
    rows: list[ErasureRequest | AccessRequest] = [
        *open_erasures,
        *open_access,
        *finished_erasures,
        *finished_access,
    ]
    return PrivacyPanel(
        open_erasures=open_erasures,
        open_access=open_access,
        finished_erasures=finished_erasures,
        finished_access=finished_access,
        names=principal_names(request, [r.requested_by for r in rows]),
    )


def _health(request: HttpRequest) -> HealthPanel:
    from kindmem.broker_probe import broker_check

    now = timezone.now()
    beats = WorkerHeartbeat.objects.aggregate(
        last=Max("seen_at"),
        alive=Count("pk", filter=Q(seen_at__gte=now - WORKER_FRESH)),
    )
    current = console_scope(request, Revision.objects.all()).filter(invalidated_at__isnull=True)
    embedding = current.aggregate(
        pending=Count("pk", filter=Q(embedding_state=EmbeddingState.PENDING)),
        failed=Count("pk", filter=Q(embedding_state=EmbeddingState.FAILED)),
    )
    return HealthPanel(
        worker_seen=beats["last"],
        workers_alive=beats["alive"],
        worker_ok=beats["alive"] > 0,
        embedding_pending=embedding["pending"],
        embedding_failed=embedding["failed"],
        broker=broker_check(),
        last_sweep=console_scope(request, SweepReport.objects.all()).order_by("-pk").first(),
    )


def front_page(request: HttpRequest) -> dict[str, Any]:
    """The panels of this staff member's front page (absent: not their role), and whether the
    list of tables is theirs to see."""
    user = request.user
    officer = user.is_superuser or is_privacy_officer(user)
    panels: dict[str, Any] = {"tables": user.is_superuser}
    if user.has_perm("approvals.view_approval"):
        panels["review"] = _review(request)
    if officer:
        panels["privacy"] = _privacy(request)
    if user.is_superuser:
        panels["health"] = _health(request)
    return panels
