"""The console's front page, per role: what each person opens the console for.

- a **reviewer** (may view approvals): the queue (how many wait, the oldest, per reason, by
  age) and their own recent decisions;
- a **privacy officer** (or a superuser): open access requests and erasures with their
  progress, recently finished ones, and the buttons that start each, find a person, or check
  whether an id was erased;
- an **admin** (a superuser): the tenant's health: worker heartbeat, embedding backlog, the
  broker; extraction's cost (tokens per agent, today and over the charts' days, against the
  daily cap; jobs refused or failed); and the full list of tables, which only they need.

Someone with several roles sees each of their panels. Every panel is a handful of aggregate
queries over the staff member's tenant (`console_scope`), whatever the size of the data.

The charts (`console.charts`, SVG drawn here, no script) show what is easier seen than read,
over the last `DAYS` days: the revisions written per day by trust and review outcome, how long
the queue has waited, the decisions per reviewer (the reviewer's panel); erasures and access
requests per day (the privacy officer's). Each is one GROUP BY (`TruncDate` and `Count` in
SQL), its rows bounded by the days and categories, not by the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, Count, F, Max, Min, Q, QuerySet, Sum, Value, When
from django.db.models.functions import TruncDate
from django.http import HttpRequest
from django.utils import timezone

from approvals.models import DECIDED, Approval, ApprovalStatus
from console.charts import Chart, Series, day_labels
from console.tenant_wall import console_scope, principal_names
from extraction.metering import usage_day
from extraction.models import ExtractionJob, ExtractionUsage, JobStatus
from facts.models import (
    EmbeddingState,
    InvalidationReason,
    Review,
    Revision,
    SweepReport,
    Trust,
    unshown,
)
from facts.review import REASONS
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
# The charts' period, in days (today included).
DAYS = 30
# Reviewers shown in the decisions chart, the busiest first.
REVIEWERS = 8
# The written-revisions chart's series: (outcome, label, colour), bottom to top.
WRITTEN = [
    (Trust.ASSERTED, "asserted", "blue"),
    (Trust.VERIFIED, "verified", "green"),
    (Trust.UNVERIFIED, "unverified (accepted)", "sky"),
    ("waiting", "waiting for review", "orange"),
    ("rejected", "rejected", "vermillion"),
    ("withdrawn", "replaced before review", "grey"),
]
DECISIONS = [
    (ApprovalStatus.APPROVED, "approved", "sky"),
    (ApprovalStatus.VERIFIED, "approved and verified", "green"),
    (ApprovalStatus.REJECTED, "rejected", "vermillion"),
]


@dataclass
class ReviewPanel:
    pending: int
    oldest: Any
    by_reason: list[tuple[str, int]]
    by_age: list[tuple[str, int]]
    decisions: list[Approval] = field(default_factory=list)
    age_chart: Chart | None = None
    written_chart: Chart | None = None
    reviewers_chart: Chart | None = None


@dataclass
class PrivacyPanel:
    open_erasures: list[ErasureRequest]
    open_access: list[AccessRequest]
    finished_erasures: list[ErasureRequest]
    finished_access: list[AccessRequest]
    names: dict[str, str]
    requests_chart: Chart | None = None


@dataclass
class ExtractionPanel:
    """Extraction's cost over the charts' days: per agent, its model calls and tokens (today's
    and the period's), the tenant's cap per day, and the jobs refused or failed."""

    agents: list[dict[str, Any]]
    today: int
    daily_cap: int
    refused: int
    failed: int


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
    for position, (_label, lower) in enumerate(AGE_BUCKETS):
        upper = AGE_BUCKETS[position + 1][1] if position + 1 < len(AGE_BUCKETS) else None
        when = Q(created_at__lte=now - lower)
        if upper is not None:
            when &= Q(created_at__gt=now - upper)
        buckets[f"age_{position}"] = Count("pk", filter=when)
    reasons = {
        f"reason_{i}": Count("pk", filter=Q(reasons__contains=[r])) for i, r in enumerate(REASONS)
    }
    found = queue.aggregate(pending=Count("pk"), oldest=Min("created_at"), **reasons, **buckets)
    decisions = list(
        console_scope(request, Approval.objects.all())
        .filter(decided_by_user_id=request.user.pk, decided_at__isnull=False)
        .select_related("revision__fact")
        .defer(*unshown("revision__"))
        .order_by("-decided_at")[:RECENT]
    )
    by_age = [(label, found[f"age_{i}"]) for i, (label, _) in enumerate(AGE_BUCKETS)]
    return ReviewPanel(
        pending=found["pending"],
        oldest=found["oldest"],
        by_reason=[(r, found[f"reason_{i}"]) for i, r in enumerate(REASONS)],
        by_age=by_age,
        decisions=decisions,
        age_chart=Chart(
            id="chart-queue-age",
            title="How long the waiting memories have waited",
            labels=[label for label, _ in by_age],
            series=[Series("waiting", [n for _, n in by_age], "orange")],
            unit="memories waiting",
            category="waited",
            horizontal=True,
            empty="No memory is waiting.",
        ),
        written_chart=_written_chart(request, now),
        reviewers_chart=_reviewers_chart(request, now),
    )


def _period(now: datetime) -> tuple[list[date], datetime]:
    """The charts' days, oldest first, and the moment the first one began (local time)."""
    today = timezone.localdate(now)
    days = [today - timedelta(days=DAYS - 1 - i) for i in range(DAYS)]
    since = datetime.combine(days[0], time.min, tzinfo=timezone.get_current_timezone())
    return days, since


def _per_day(rows: QuerySet[Any], days: list[date], key: str = "") -> dict[str, list[int]]:
    """{key value: [count per day]} from rows of `day`, `n` (and `key`)."""
    index = {day: i for i, day in enumerate(days)}
    counts: dict[str, list[int]] = {}
    for row in rows:
        if row["day"] in index:
            series = counts.setdefault(row[key] if key else "", [0] * len(days))
            series[index[row["day"]]] += row["n"]
    return counts


def _written_chart(request: HttpRequest, now: datetime) -> Chart:
    days, since = _period(now)
    # A revision's review outcome is in its own columns (facts/remember.py): waiting is
    # pending and current; a rejection invalidates it as deleted, still pending; a newer
    # value from the agent before anyone decided invalidates it otherwise.
    outcome = Case(
        When(review=Review.PENDING, invalidated_at__isnull=True, then=Value("waiting")),
        When(
            review=Review.PENDING,
            invalidation_reason=InvalidationReason.DELETED,
            then=Value("rejected"),
        ),
        When(review=Review.PENDING, then=Value("withdrawn")),
        default=F("trust"),
    )
    rows = (
        console_scope(request, Revision.objects.all())
        .filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"), outcome=outcome)
        .values("day", "outcome")
        .annotate(n=Count("*"))  # not the id: the index "revision_written" alone answers
        .order_by()
    )
    counts = _per_day(rows, days, "outcome")
    return Chart(
        id="chart-written",
        title=f"Revisions written per day, the last {DAYS} days, by trust and review",
        labels=day_labels(days),
        series=[
            Series(label, counts.get(key, [0] * len(days)), colour)
            for key, label, colour in WRITTEN
        ],
        unit="revisions",
        category="day",
    )


def _reviewers_chart(request: HttpRequest, now: datetime) -> Chart:
    _days, since = _period(now)
    rows = list(
        console_scope(request, Approval.objects.all())
        .filter(decided_at__gte=since, status__in=DECIDED)
        .values("decided_by", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    per: dict[str, dict[str, int]] = {}
    for row in rows:
        per.setdefault(row["decided_by"], {})[row["status"]] = row["n"]
    busiest = sorted(per, key=lambda who: (-sum(per[who].values()), who))[:REVIEWERS]
    names = principal_names(request, busiest)
    return Chart(
        id="chart-reviewers",
        title=f"Decisions per reviewer, the last {DAYS} days",
        labels=[names.get(who, who) for who in busiest],
        series=[
            Series(label, [per[who].get(status, 0) for who in busiest], colour)
            for status, label, colour in DECISIONS
        ],
        unit="decisions",
        category="reviewer",
        horizontal=True,
        empty=f"No decision in the last {DAYS} days.",
    )


def _requests_chart(request: HttpRequest) -> Chart:
    days, since = _period(timezone.now())

    def per_day(model: Any) -> list[int]:
        rows = (
            console_scope(request, model.objects.all())
            .filter(created_at__gte=since)
            .annotate(day=TruncDate("created_at"))
            .values("day")
            .annotate(n=Count("pk"))
            .order_by()
        )
        return _per_day(rows, days).get("", [0] * len(days))

    return Chart(
        id="chart-requests",
        title=f"Erasures and access requests per day, the last {DAYS} days",
        labels=day_labels(days),
        series=[
            Series("erasures", per_day(ErasureRequest), "vermillion"),
            Series("access requests", per_day(AccessRequest), "blue"),
        ],
        unit="requests",
        category="day",
        empty=f"No request in the last {DAYS} days.",
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
        requests_chart=_requests_chart(request),
    )


def _health(request: HttpRequest) -> HealthPanel:
    from api.broker import broker_check

    now = timezone.now()
    beats = WorkerHeartbeat.objects.aggregate(
        last=Max("seen_at"),
        alive=Count("pk", filter=Q(seen_at__gte=now - WORKER_FRESH)),
    )
    # the backlog's own partial index (facts.Revision "revision_embedding_backlog"): a count of
    # the few waiting, never of every current revision
    backlog = console_scope(request, Revision.objects.all()).filter(
        invalidated_at__isnull=True,
        embedding_state__in=[EmbeddingState.PENDING, EmbeddingState.FAILED],
    )
    embedding = backlog.aggregate(
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


def _extraction(request: HttpRequest) -> ExtractionPanel:
    now = timezone.now()
    today = usage_day(now)
    first = today - timedelta(days=DAYS - 1)
    usage = console_scope(request, ExtractionUsage.objects.all()).filter(day__gte=first)
    agents: list[dict[str, Any]] = [
        dict(row)
        for row in usage.values("agent__agent_id")
        .annotate(
            total_calls=Sum("calls"),
            total_in=Sum("tokens_in"),
            total_out=Sum("tokens_out"),
            today_in=Sum("tokens_in", filter=Q(day=today)),
            today_out=Sum("tokens_out", filter=Q(day=today)),
        )
        .order_by("agent__agent_id")
    ]
    since = datetime.combine(first, time.min, tzinfo=UTC)
    outcomes = (
        console_scope(request, ExtractionJob.objects.all())
        .filter(created_at__gte=since)
        .aggregate(
            refused=Count("pk", filter=Q(status=JobStatus.REFUSED)),
            failed=Count("pk", filter=Q(status=JobStatus.FAILED)),
        )
    )
    for agent in agents:
        agent["today"] = (agent["today_in"] or 0) + (agent["today_out"] or 0)
    return ExtractionPanel(
        agents=agents,
        today=sum(a["today"] for a in agents),
        daily_cap=settings.EXTRACTION_TENANT_DAILY_TOKENS,
        refused=outcomes["refused"],
        failed=outcomes["failed"],
    )


def front_page(request: HttpRequest) -> dict[str, Any]:
    """The panels of this staff member's front page (absent: not their role), and whether the
    list of tables is theirs to see."""
    user = request.user
    officer = user.is_superuser or is_privacy_officer(user)
    panels: dict[str, Any] = {"tables": user.is_superuser, "days": DAYS}
    if user.has_perm("approvals.view_approval"):
        panels["review"] = _review(request)
    if officer:
        panels["privacy"] = _privacy(request)
    if user.is_superuser:
        panels["health"] = _health(request)
        panels["extraction"] = _extraction(request)
    return panels
