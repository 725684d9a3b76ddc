"""The staff console for facts: read-mostly, since revisions are immutable and every change
goes through a service (supersede, verify, delete) that writes the next revision."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from facts.models import (
    Fact,
    Link,
    RetentionPolicy,
    Revision,
    Subject,
    SweepReport,
    WritePolicy,
)
from kindmem.console import TenantScopedAdmin, person_link


class ReadOnlyAdmin(TenantScopedAdmin):
    """Immutable rows: shown, never added, edited or deleted from the console. Staff see their
    own tenant's rows; platform staff see all (`kindmem.console`)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RevisionTimeline(admin.TabularInline):
    """The fact page's timeline: every revision, newest first, and why each one ended."""

    model = Revision
    fk_name = "fact"
    ordering = ["-version"]
    extra = 0
    show_change_link = True
    fields = [
        "version",
        "content",
        "trust",
        "verified_by",
        "attributed_kind",
        "attributed_id",
        "attributed_agent_version",
        "created_at",
        "invalidated_at",
        "invalidated_by",
        "invalidation_reason",
        "review",
        "expires_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(ReadOnlyAdmin):
    list_display = ["id", "type", "tenant", "project", "participant", "person_user", "created_at"]
    list_filter = ["tenant", "type", "created_at"]
    # "=" keeps each lookup exact and indexed; subject ids find what a person's facts are.
    search_fields = ["=id", "=participant_id", "=thread_id", "=revisions__subjects__subject_id"]
    list_select_related = ["tenant", "project", "user"]
    inlines = [RevisionTimeline]

    @admin.display(description="participant", ordering="participant_id")
    def participant(self, fact: Fact) -> str:
        return person_link("participant", fact.participant_id, fact.tenant_id)

    @admin.display(description="user", ordering="user")
    def person_user(self, fact: Fact) -> str:
        if fact.user is None:
            return "—"
        return person_link("user", fact.user_id, fact.tenant_id, fact.user.username)


class SubjectInline(admin.TabularInline):
    model = Subject
    fk_name = "revision"
    extra = 0
    fields = ["kind", "subject_id"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = [
        "fact",
        "version",
        "trust",
        "attributed_kind",
        "created_at",
        "invalidation_reason",
        "review",
        "expires_at",
    ]
    list_filter = ["tenant", "trust", "invalidation_reason", "review", "embedding_state"]
    search_fields = ["=id", "=fact__id", "=subjects__subject_id", "=attributed_id"]
    list_select_related = ["fact", "tenant"]
    exclude = ["embedding"]
    inlines = [SubjectInline]


@admin.register(Subject)
class SubjectAdmin(ReadOnlyAdmin):
    list_display = ["kind", "person", "fact", "revision", "tenant"]
    list_filter = ["tenant", "kind"]
    search_fields = ["=subject_id", "=fact__id"]
    list_select_related = ["tenant", "fact", "revision"]

    @admin.display(description="subject", ordering="subject_id")
    def person(self, subject: Subject) -> str:
        return person_link(subject.kind, subject.subject_id, subject.tenant_id)


@admin.register(Link)
class LinkAdmin(ReadOnlyAdmin):
    list_display = ["source", "type", "target", "confidence", "created_by", "created_at"]
    list_filter = ["tenant", "type"]
    search_fields = ["=source__id", "=target__id", "type"]
    list_select_related = ["tenant", "source", "target"]


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(TenantScopedAdmin):
    """Tenant defaults per fact type: editable; a fact-level retention override wins."""

    list_display = ["fact_type", "tenant", "keep_days", "legal_hold"]
    list_filter = ["tenant", "legal_hold"]
    search_fields = ["fact_type"]
    list_select_related = ["tenant"]


@admin.register(WritePolicy)
class WritePolicyAdmin(TenantScopedAdmin):
    """Per fact type: last-write-wins (the default) or a bounded ring of max_records."""

    list_display = ["fact_type", "tenant", "policy", "max_records"]
    list_filter = ["tenant", "policy"]
    search_fields = ["fact_type"]
    list_select_related = ["tenant"]


@admin.register(SweepReport)
class SweepReportAdmin(ReadOnlyAdmin):
    """What each run of the expiry sweep and the purge did, per tenant (beat runs them)."""

    list_display = ["started_at", "tenant", "kind", "count", "batches", "finished_at"]
    list_filter = ["kind", "tenant"]
    search_fields = ["tenant__name"]
    list_select_related = ["tenant"]
    ordering = ["-started_at"]
