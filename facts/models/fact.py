"""`Fact`: a fact across its revisions, where it lives (its scope) and what kind of thing it is;
and `FactQuerySet`, the reads of many."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import connections, models
from django.db.models import Q, QuerySet
from django.utils import timezone

from facts.models.subject import Subject
from kindmem.guards import fact_guard
from kindmem.holds import frozen, held_condition
from kindmem.models import Org, Project, SubjectKind, Tenant, User
from kindmem.subjects import Subject as SubjectRef
from kindmem.tenant_keys import TenantForeignKey, TenantOwned

if TYPE_CHECKING:
    from kindmem.access import Readers


class FactQuerySet(models.QuerySet["Fact"]):
    def of_tenant(self, tenant_id: uuid.UUID | str) -> FactQuerySet:
        return self.filter(tenant_id=tenant_id)

    def readable_by(self, readers: Readers, *, narrowed_to: Readers | None = None) -> FactQuerySet:
        """Facts whose scope `readers` may read (`isReadableBy`, in SQL; `narrowed_to` must
        read it too), none of whose scope persons is held by an erasure in progress, and not
        frozen after one."""
        return (
            self.filter(fact_guard(readers, narrowed_to=narrowed_to))
            .exclude(held_condition())
            .exclude(frozen())
        )

    def about(self, subject: SubjectRef) -> FactQuerySet:
        """The facts about `subject`: its scope names them (the participant, the Kindgi user,
        the thread for a conversation) or any revision lists them as a subject."""
        if subject.kind == SubjectKind.CONVERSATION:
            return self.filter(thread_id=subject.id)
        return self.filter(pk__in=self.ids_about(subject))

    def ids_about(self, subject: SubjectRef) -> QuerySet[Any]:
        """The ids of the facts about `subject` (see `about`), for an `__in` lookup that needs
        no fact row: `pk__in=Fact.objects.about(...).values("pk")` joins every fact of the
        tenant to the ids (a scan of 100,000 facts for a busy person's approvals)."""
        if subject.kind == SubjectKind.CONVERSATION:
            return self.filter(thread_id=subject.id).order_by().values("pk")
        named = Subject.objects.filter(kind=subject.kind.value, subject_id=subject.id)
        if subject.kind == SubjectKind.PARTICIPANT:
            scoped = self.filter(participant_id=subject.id)
        elif subject.kind == SubjectKind.USER:
            scoped = self.filter(user_id=subject.user_uuid)
        else:
            return named.order_by().values("fact_id")
        # A UNION of two index lookups, not "scope OR EXISTS (a subject row)": PostgreSQL uses
        # no index for an OR across a subquery, and scanned every fact of the tenant for each
        # person page and erasure batch (bench/console_pages.py, 100,000 facts: 37 ms to 0.3).
        # UNION ALL: an `__in` needs no distinct ids, and removing the duplicates (most facts
        # name their person twice) was a third of the busiest person's approvals query.
        return scoped.order_by().values("pk").union(named.order_by().values("fact_id"), all=True)

    def newest_about(self, subject: SubjectRef, limit: int) -> tuple[list[uuid.UUID], int]:
        """The ids of the `limit` newest facts about `subject` (see `about`) and how many
        there are, in one statement. For a participant or a user: their scoped facts, plus
        the facts whose subject rows name them and whose scope does not; each branch reads
        its own index and the creation time from the rows it finds, where "pk IN (every id)"
        fetched each fact again by its key (the person with 13,000 facts: 55 ms to 25,
        bench/console_pages.py)."""
        if subject.kind == SubjectKind.CONVERSATION:
            rows = self.filter(thread_id=subject.id).values("pk", "created_at")
        else:
            named = Subject.objects.filter(kind=subject.kind.value, subject_id=subject.id)
            named_ids = named.order_by().values("fact_id")
            if subject.kind == SubjectKind.PARTICIPANT:
                scoped = self.filter(participant_id=subject.id)
            elif subject.kind == SubjectKind.USER:
                scoped = self.filter(user_id=subject.user_uuid)
            else:
                scoped = None
            if scoped is None:
                rows = self.filter(pk__in=named_ids).values("pk", "created_at")
            else:
                others = self.filter(
                    pk__in=named_ids.difference(scoped.order_by().values("pk"))
                ).values("pk", "created_at")
                rows = (
                    scoped.order_by().values("pk", "created_at").union(others.order_by(), all=True)
                )
        # the ORM's own SQL, its values passed apart: a window count over a UNION is what the
        # ORM cannot annotate
        sql, params = rows.query.sql_with_params()
        with connections[self.db].cursor() as cursor:
            cursor.execute(
                f"SELECT about.pk, COUNT(*) OVER () FROM ({sql}) AS about"  # noqa: S608
                " ORDER BY about.created_at DESC, about.pk DESC LIMIT %s",
                [*params, limit],
            )
            found = cursor.fetchall()
        return [row[0] for row in found], (found[0][1] if found else 0)


class Fact(TenantOwned):
    """A fact across its revisions: where it lives (scope) and what kind of thing it is."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="facts")
    type = models.CharField(max_length=100)
    # The scope (the seed's MemoryScope): the containers the reader guard checks.
    org = TenantForeignKey(Org, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    project = TenantForeignKey(
        Project, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    user = models.ForeignKey(
        User, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    participant_id = models.CharField(max_length=200, null=True, blank=True)
    thread_id = models.CharField(max_length=200, null=True, blank=True)
    # The session is not a container: it narrows, it never grants.
    session_id = models.CharField(max_length=200, null=True, blank=True)
    # The slot an agent fills (`remember`'s `key`): a new value for it is the next revision.
    key = models.CharField(max_length=200, null=True, blank=True)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Set when an erasure of a person the fact is about finished and kept the fact under legal
    # hold: from then on it is frozen (`kindmem.holds.frozen`), kept for the privacy officer's
    # access export, read by no agent and written by nobody.
    frozen_at = models.DateTimeField(null=True, blank=True)

    objects = FactQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(participant_id__isnull=True) | Q(project__isnull=False),
                name="fact_participant_requires_project",
            ),
            models.CheckConstraint(condition=~Q(type=""), name="fact_type_not_empty"),
        ]
        indexes = [
            # GET /v1/facts?type=...: the tenant's facts of one type
            models.Index(fields=["tenant", "type"], name="fact_by_type"),
            # the guard and erasure: a project's / a participant's / a user's facts
            models.Index(fields=["tenant", "project", "participant_id"], name="fact_by_project"),
            models.Index(fields=["tenant", "user"], name="fact_by_user"),
            models.Index(fields=["tenant", "thread_id"], name="fact_by_thread"),
            # remember: the fact that holds a slot
            models.Index(fields=["tenant", "type", "key"], name="fact_by_slot"),
            # ?tag=...
            GinIndex(fields=["tags"], name="fact_tags_gin"),
            # the console's facts list, newest first (FactAdmin.ordering): a page of 50 read
            # down the index, not a sort of every fact of the tenant
            models.Index(fields=["tenant", "-created_at", "-id"], name="fact_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"

    @property
    def scope(self) -> dict[str, str]:
        """The seed's MemoryScope (snake_case), naming only the containers set."""
        values = {
            "org_id": self.org_id,
            "project_id": self.project_id,
            "user_id": self.user_id,
            "participant_id": self.participant_id,
            "thread_id": self.thread_id,
            "session_id": self.session_id,
        }
        return {k: str(v) for k, v in values.items() if v is not None}
