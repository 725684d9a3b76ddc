"""`Revision`: one immutable version of a fact, and `RevisionQuerySet`, what every read of facts
starts from (`Revision.objects.live().readable_by(readers)`); a revision's subjects read in
the same query (`subject_rows`, `attach_subjects`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import JSONObject
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from embeddings.providers import DIMENSIONS
from facts.models.choices import (
    AttributionKind,
    EmbeddingState,
    InvalidationReason,
    Review,
    ReviewState,
    Trust,
)
from facts.models.fact import Fact
from facts.models.subject import Subject
from kindmem.guards import fact_guard
from kindmem.holds import frozen, held_among, held_condition
from kindmem.models import Run, Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOneToOneField, TenantOwned
from retrieval.fulltext import TEXT_CONFIG

if TYPE_CHECKING:
    from kindmem.access import Readers


def _held_subject() -> Exists:
    """Whether an erasure in progress holds one of the subjects of the revision of the query
    this is used in."""
    return held_among(
        lambda outer: Subject.objects.filter(tenant_id=outer("tenant_id"), revision_id=outer("pk"))
    )


# A revision's columns no page shows: its vector (384 floats, ~3.5 kB as text, parsed into a
# Python list on every row) and its tsvector. A console page of 50 revisions fetched and parsed
# 50 vectors for nothing (bench/console_pages.py).
UNSHOWN = ("embedding", "search_vector")


def unshown(prefix: str = "") -> list[str]:
    """`UNSHOWN` for `defer()`, through a relation ("revision__") where the query selects the
    revision with another model."""
    return [f"{prefix}{name}" for name in UNSHOWN]


class RevisionQuerySet(models.QuerySet["Revision"]):
    def of_tenant(self, tenant_id: uuid.UUID | str) -> RevisionQuerySet:
        return self.filter(tenant_id=tenant_id)

    def shown(self) -> RevisionQuerySet:
        """Without the columns no page shows (`UNSHOWN`)."""
        return self.defer(*UNSHOWN)

    def readable_by(
        self, readers: Readers, *, narrowed_to: Readers | None = None
    ) -> RevisionQuerySet:
        """Revisions of facts whose scope `readers` may read (the seed's `isReadableBy`,
        compiled to SQL; `narrowed_to` must read it too: `kindmem.guards`), excluding any whose
        fact's scope person or whose subjects an erasure in progress holds, and any of a fact
        frozen after an erasure. Apply before any
        LIMIT."""
        return (
            self.filter(fact_guard(readers, "fact__", narrowed_to=narrowed_to))
            .exclude(held_condition("fact__"))
            .exclude(frozen("fact__"))
            .exclude(_held_subject())
        )

    def of_live_facts(self) -> RevisionQuerySet:
        """Revisions of facts a read still returns: whose current revision is live (current,
        approved, unexpired) and none of whose subjects an erasure holds. What history and
        as-of reads start from, since a fact's history is its content: a fact deleted, expired,
        erased, rejected or still waiting for review has none to show (a 404, as its detail),
        and its rows wait for the purge. The scope guard is the fact's, so `readable_by` on
        these rows covers the current revision as well."""
        live = (
            Revision.objects.filter(tenant_id=OuterRef("tenant_id"), fact_id=OuterRef("fact_id"))
            .live()
            .exclude(_held_subject())
        )
        return self.filter(Exists(live))

    def current(self) -> RevisionQuerySet:
        """Each fact's current revision (record time: never invalidated)."""
        return self.filter(invalidated_at__isnull=True)

    def approved(self) -> RevisionQuerySet:
        """Not waiting for a person's review: a pending fact is never retrieved."""
        return self.filter(review__isnull=True)

    def unexpired(self, at: datetime | None = None) -> RevisionQuerySet:
        """Not past `expires_at`, now nor at `at` (an as-of read's record time): compared in
        the query, so no read waits for a sweep. An `at` in the past never brings back what
        has expired since: no read returns a revision after its `expires_at`."""
        now = timezone.now()
        at = max(at, now) if at is not None else now
        return self.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=at))

    def valid_at(self, at: datetime) -> RevisionQuerySet:
        """True in the world at `at` (application time): valid_from <= at < valid_until."""
        return self.filter(
            Q(valid_from__isnull=True) | Q(valid_from__lte=at),
            Q(valid_until__isnull=True) | Q(valid_until__gt=at),
        )

    def as_of(self, at: datetime) -> RevisionQuerySet:
        """What kindmem held at record time `at`: written by then and not yet invalidated.
        Record time only: a read adds `unexpired(at)`, which checks expiry now as well, and
        `of_live_facts()`."""
        return self.filter(
            Q(created_at__lte=at), Q(invalidated_at__isnull=True) | Q(invalidated_at__gt=at)
        )

    def narrowed(
        self,
        *,
        type: str | None = None,
        scope: dict[str, str] | None = None,
        tag: str | None = None,
        key: str | None = None,
    ) -> RevisionQuerySet:
        """Narrow within what the guard lets through: type, slot key, scope keys (every given
        key must match exactly) and a tag."""
        qs = self
        if type:
            qs = qs.filter(fact__type=type)
        if key is not None:
            qs = qs.filter(fact__key=key)
        for key, value in (scope or {}).items():
            qs = qs.filter(**{f"fact__{key}": value})
        if tag:
            qs = qs.filter(fact__tags__contains=[tag])
        return qs

    def unembedded(self, model: str) -> RevisionQuerySet:
        """Current revisions without a vector of `model` (none yet, or another model's): what
        `embed_revisions` and `manage.py reembed` work through. History is never searched, so
        it is not re-embedded."""
        return self.current().filter(Q(embedding__isnull=True) | ~Q(embedding_model=model))

    def waiting_for_embedding(self) -> RevisionQuerySet:
        """Current revisions the write path left `pending` (its budget ran out), oldest first:
        what `embed_revisions` tops its batch up with (the `revision_embedding_waiting` index)."""
        return self.current().filter(embedding_state=EmbeddingState.PENDING).order_by("created_at")

    def live(self, now: datetime | None = None) -> RevisionQuerySet:
        """What a read returns (DESIGN rule 3): current, approved, unexpired (now, or at `now`
        when the caller took the time already, never earlier: see `unexpired`)."""
        return self.current().approved().unexpired(at=now)


class Revision(TenantOwned):
    """One immutable version of a fact. Supersede, verify and delete never edit content: they
    write the next revision and/or set the invalidation columns of this one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    fact = TenantForeignKey(Fact, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    content = models.JSONField()
    content_hash = models.CharField(max_length=64)
    trust = models.CharField(max_length=10, choices=Trust.choices, default=Trust.ASSERTED)
    verified_by = models.CharField(max_length=200, null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    # PROV wasAttributedTo: set by the server from the writer's credential, never the body.
    attributed_kind = models.CharField(max_length=10, choices=AttributionKind.choices)
    attributed_id = models.CharField(max_length=200)
    attributed_agent_version = models.CharField(max_length=50, null=True, blank=True)
    # PROV wasGeneratedBy: the run step that wrote it, for one an agent wrote.
    generated_by_run = TenantForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    generated_by_step_id = models.CharField(max_length=200, null=True, blank=True)
    generated_by_tool_call_id = models.CharField(max_length=200, null=True, blank=True)
    # World time (when it is true) and when it was said or seen.
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    # Record time: written, and (once not current) when, by whom and why it stopped being.
    created_at = models.DateTimeField(default=timezone.now)
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_by = models.CharField(max_length=200, null=True, blank=True)
    invalidation_reason = models.CharField(
        max_length=10, choices=InvalidationReason.choices, null=True, blank=True
    )
    review = models.CharField(max_length=10, choices=Review.choices, null=True, blank=True)
    # When a reviewer approved the content after it waited (`revision_approve`), carried to the
    # revisions that repeat that content (a verify, a change of its retention or subjects):
    # the API's `review: approved` (`review_state`). `review` itself stays NULL once approved,
    # which is what every read and the one-current-revision index look for.
    approved_at = models.DateTimeField(null=True, blank=True)
    # A value written to wait for review: the version of the fact's approved value it was
    # computed from (a merge patch's base, the slot value it would replace), None when the fact
    # had none. Approving it is a compare-and-swap on it (`facts.stale`): a fact that moved on
    # since (edited, patched, verified, deleted, erased) is never overwritten by it.
    base_version = models.PositiveIntegerField(null=True, blank=True)
    # Retention override (the seed's Retention); tenant policy supplies the defaults.
    keep_days = models.PositiveIntegerField(null=True, blank=True)
    keep_until = models.DateTimeField(null=True, blank=True)
    legal_hold = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    # Kind-B cached views: where the content comes from and how fresh it is (the seed's Source).
    source = models.JSONField(null=True, blank=True)
    caused_by_log_id = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # PROV wasRevisionOf. One-to-one: a revision is replaced at most once.
    supersedes = TenantOneToOneField(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="superseded_by"
    )
    # Search columns (keyword and semantic search query these; see facts/search).
    search_text = models.TextField(default="", blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("search_text", config=TEXT_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    embedding = VectorField(dimensions=DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, null=True, blank=True)
    embedding_state = models.CharField(
        max_length=10, choices=EmbeddingState.choices, default=EmbeddingState.PENDING
    )

    objects = RevisionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "fact", "version"], name="revision_version_unique"
            ),
            models.UniqueConstraint(
                fields=["tenant", "supersedes"], name="revision_supersedes_unique"
            ),
            # Exactly one current approved revision per fact: two concurrent supersedes cannot
            # both win. A successor pending review is not counted: the approved value stays
            # current (and readable) until a reviewer approves the new one.
            models.UniqueConstraint(
                fields=["tenant", "fact"],
                condition=Q(invalidated_at__isnull=True, review__isnull=True),
                name="one_current_revision_per_fact",
            ),
            # remember's idempotency: one revision per (run, tool call).
            models.UniqueConstraint(
                fields=["tenant", "generated_by_run", "generated_by_tool_call_id"],
                condition=Q(generated_by_run__isnull=False)
                & Q(generated_by_tool_call_id__isnull=False),
                name="one_revision_per_tool_call",
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="revision_version_positive"),
            models.CheckConstraint(
                condition=Q(trust__in=Trust.values), name="revision_trust_valid"
            ),
            models.CheckConstraint(
                condition=Q(attributed_kind__in=AttributionKind.values),
                name="revision_attribution_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(invalidation_reason__isnull=True)
                | Q(invalidation_reason__in=InvalidationReason.values),
                name="revision_invalidation_reason_valid",
            ),
            models.CheckConstraint(
                condition=Q(invalidated_at__isnull=True, invalidation_reason__isnull=True)
                | Q(invalidated_at__isnull=False, invalidation_reason__isnull=False),
                name="revision_invalidated_with_reason",
            ),
            models.CheckConstraint(
                condition=Q(review__isnull=True) | Q(review__in=Review.values),
                name="revision_review_valid",
            ),
            models.CheckConstraint(
                condition=Q(review__isnull=True) | Q(approved_at__isnull=True),
                name="revision_pending_not_approved",
            ),
            models.CheckConstraint(
                condition=Q(base_version__isnull=True) | Q(base_version__lt=models.F("version")),
                name="revision_base_version_before",
            ),
            models.CheckConstraint(
                condition=Q(embedding_state__in=EmbeddingState.values),
                name="revision_embedding_state_valid",
            ),
            models.CheckConstraint(
                condition=Q(valid_from__isnull=True)
                | Q(valid_until__isnull=True)
                | Q(valid_from__lt=models.F("valid_until")),
                name="revision_valid_from_before_until",
            ),
            models.CheckConstraint(
                condition=~Q(trust=Trust.VERIFIED)
                | Q(verified_by__isnull=False, verified_at__isnull=False),
                name="revision_verified_names_verifier",
            ),
        ]
        indexes = [
            # a fact's history, newest first
            models.Index(fields=["tenant", "fact", "-version"], name="revision_history"),
            # list reads: the current revisions of a tenant, newest first
            models.Index(
                fields=["tenant", "-created_at"],
                condition=Q(invalidated_at__isnull=True),
                name="revision_current_recent",
            ),
            # the console's front page: revisions written per day by trust and review outcome,
            # the last 30 days, read from the index alone (privacy/front_page.py)
            models.Index(
                fields=["tenant", "created_at"],
                include=["trust", "review", "invalidated_at", "invalidation_reason"],
                name="revision_written",
            ),
            # the front page's embedding backlog: the few current revisions still waiting for
            # (or failed by) the embedder, not a count over every current revision
            models.Index(
                fields=["tenant", "embedding_state"],
                condition=Q(
                    invalidated_at__isnull=True,
                    embedding_state__in=[EmbeddingState.PENDING, EmbeddingState.FAILED],
                ),
                name="revision_embedding_backlog",
            ),
            # the expiry sweep: current revisions past expires_at
            models.Index(
                fields=["tenant", "expires_at"],
                condition=Q(invalidated_at__isnull=True, expires_at__isnull=False),
                name="revision_expiry",
            ),
            # embed_revisions: a tenant's revisions waiting for a vector, oldest first
            # (`waiting_for_embedding`); small, since rows leave it once embedded
            models.Index(
                fields=["tenant", "created_at"],
                condition=Q(embedding_state="pending", invalidated_at__isnull=True),
                name="revision_embedding_waiting",
            ),
            # a write's dedup (`facts.write_policy._same`): the current revision of the same
            # content, found by its hash whatever the size of the writer's scope, on one plan for
            # any values (a generic plan: compiled); without it, the scope's every fact is read
            models.Index(
                fields=["tenant", "content_hash"],
                condition=Q(invalidated_at__isnull=True),
                name="revision_current_content",
            ),
            # keyword search over search_vector
            GinIndex(fields=["search_vector"], name="revision_search_gin"),
            # semantic search: cosine distance over embedding. ef_construction 128 (pgvector's
            # default is 64): on 100k MiniLM vectors of short, templated facts, recall@10 at
            # ef_search 400 for a reader filtering half the rows went from 0.94 to 0.99
            # (bench/search.py); the build takes ~1.5x as long.
            HnswIndex(
                name="revision_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fact_id} v{self.version}"

    @property
    def review_state(self) -> str | None:
        """The API's `review`: `pending` while it waits for a person (no read returns it),
        `approved` once a reviewer approved its content, None when it never had to wait."""
        if self.review:
            return ReviewState.PENDING
        return ReviewState.APPROVED if self.approved_at is not None else None

    @property
    def is_current(self) -> bool:
        return self.invalidated_at is None


def subject_rows(tenant_id: uuid.UUID | str) -> ArraySubquery:
    """Every subject of the revision (of `tenant_id`), as one array column of the query that
    reads it (what a search or a write renders), so that no second query has to fetch them; see
    `attach_subjects`. The tenant is a value, not the outer row's: Citus routes a subquery in
    the select list to the tenant's shard only when it names the tenant itself."""
    return ArraySubquery(
        Subject.objects.filter(tenant_id=tenant_id, revision_id=OuterRef("pk"))
        .order_by("id")
        .values(row=JSONObject(id="id", kind="kind", subject_id="subject_id"))
    )


def attach_subjects(revisions: Sequence[Revision], column: str = "subject_rows") -> None:
    """Make `revision.subjects.all()` read what `subject_rows()` brought in `column`, as
    `prefetch_related("subjects")` would have (no query per revision)."""
    names = ["id", "tenant_id", "revision_id", "fact_id", "kind", "subject_id"]
    for revision in revisions:
        of_revision = (revision.tenant_id, revision.pk, revision.fact_id)
        found = [
            Subject.from_db("default", names, (s["id"], *of_revision, s["kind"], s["subject_id"]))
            for s in getattr(revision, column)
        ]
        # what Django's prefetch leaves behind: the manager's queryset, its result filled in
        cached = revision.subjects.get_queryset()
        cached._result_cache = found
        cached._prefetch_done = True  # type: ignore[attr-defined]
        revision._prefetched_objects_cache = {  # type: ignore[attr-defined]
            **getattr(revision, "_prefetched_objects_cache", {}),
            "subjects": cached,
        }
