"""The staff console for facts: read-mostly, since revisions are immutable and every change
goes through a service (supersede, verify, delete) that writes the next revision."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from audit.console import console_read_record
from console.tenant_wall import TenantScopedAdmin
from facts.console_names import fact_label
from facts.fact_page import fact_page
from facts.models import (
    Fact,
    Link,
    RetentionPolicy,
    Revision,
    Subject,
    SweepReport,
    WritePolicy,
)


class ReadOnlyAdmin(TenantScopedAdmin):
    """Immutable rows: shown, never added, edited or deleted from the console. Staff see their
    own tenant's rows; platform staff see all (`console.tenant_wall`)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(ReadOnlyAdmin):
    """The fact list, and each fact's page (`facts.fact_page`) in place of the stock form."""

    list_display = ["what", "project_name", "participant", "person_user", "tenant", "created_at"]
    list_filter = ["tenant", "type", "created_at"]
    # "=" keeps each lookup exact and indexed; subject ids find what a person's facts are.
    search_fields = ["=id", "=participant_id", "=thread_id", "=revisions__subjects__subject_id"]
    list_select_related = ["tenant", "project", "user"]
    ordering = ["-created_at", "-id"]  # newest first, down the index `fact_recent`

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("tenant", "org", "project", "user")

    def names_wanted(self, fact: Fact) -> Iterable[tuple[str, Any]]:
        yield ("project", fact.project_id)
        if fact.participant_id:
            yield ("person", f"participant:{fact.participant_id}")
        if fact.user_id:
            yield ("person", f"user:{fact.user_id}")

    @admin.display(description="fact", ordering="type")
    def what(self, fact: Fact) -> str:
        return format_html(
            '{} <span class="km-id" title="{}">{}</span>',
            fact_label(fact),
            fact.pk,
            str(fact.pk)[:8],
        )

    @admin.display(description="project", ordering="project__name")
    def project_name(self, fact: Fact) -> str:
        return self.name_link(fact, "project", fact.project_id)

    @admin.display(description="participant", ordering="participant_id")
    def participant(self, fact: Fact) -> str:
        if not fact.participant_id:
            return "—"
        return self.name_link(fact, "person", f"participant:{fact.participant_id}")

    @admin.display(description="user", ordering="user")
    def person_user(self, fact: Fact) -> str:
        if fact.user_id is None:
            return "—"
        return self.name_link(fact, "person", f"user:{fact.user_id}")

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        """The fact's page: what it says, its history with what each revision changed, and
        what caused each one. Opening it is a read of the people it is about, audited."""
        fact = self.get_object(request, unquote(object_id))  # unknown, another tenant's: 404
        if not self.has_view_permission(request, fact):
            raise PermissionDenied
        page = fact_page(request, fact)
        console_read_record(
            user=request.user,
            tenant_id=fact.tenant_id,
            kind="fact",
            object_ids=page.shown_ids,
            subjects=page.people,
            endpoint="GET console fact",
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": fact_label(fact),
            "fact": fact,
            "page": page,
            "names": page.names,
        }
        return TemplateResponse(request, "admin/facts/fact/page.html", context)


def to_fact_page(fact_id: Any, version: int | None = None, part: str = "") -> HttpResponse:
    """A revision, a subject or a link is shown on its fact's page: its own page goes there."""
    url = reverse("admin:facts_fact_change", args=[fact_id])
    anchor = f"#revision-{version}" if version is not None else part
    return HttpResponseRedirect(url + anchor)


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = [
        "revision",
        "trust",
        "written_by",
        "created_at",
        "invalidation_reason",
        "review",
        "expires_at",
    ]
    list_filter = ["tenant", "trust", "invalidation_reason", "review", "embedding_state"]
    search_fields = ["=id", "=fact__id", "=subjects__subject_id", "=attributed_id"]
    list_select_related = ["fact", "tenant"]
    ordering = ["-created_at", "id"]

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("embedding", "search_text")

    def names_wanted(self, revision: Revision) -> Iterable[tuple[str, Any]]:
        yield ("principal", f"{revision.attributed_kind}:{revision.attributed_id}")

    @admin.display(description="revision", ordering="fact")
    def revision(self, revision: Revision) -> str:
        return format_html(
            '{} v{} <span class="km-id" title="{}">{}</span>',
            fact_label(revision.fact),
            revision.version,
            revision.pk,
            str(revision.pk)[:8],
        )

    @admin.display(description="written by", ordering="attributed_id")
    def written_by(self, revision: Revision) -> str:
        return self.name_link(
            revision, "principal", f"{revision.attributed_kind}:{revision.attributed_id}"
        )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        revision = self.get_object(request, unquote(object_id))
        return to_fact_page(revision.fact_id, revision.version)


@admin.register(Subject)
class SubjectAdmin(ReadOnlyAdmin):
    list_display = ["kind", "person", "about", "tenant"]
    list_filter = ["tenant", "kind"]
    search_fields = ["=subject_id", "=fact__id"]
    list_select_related = ["tenant", "fact", "revision"]

    def names_wanted(self, subject: Subject) -> Iterable[tuple[str, Any]]:
        yield ("person", f"{subject.kind}:{subject.subject_id}")
        yield ("revision", subject.revision_id)

    @admin.display(description="subject", ordering="subject_id")
    def person(self, subject: Subject) -> str:
        return self.name_link(subject, "person", f"{subject.kind}:{subject.subject_id}")

    @admin.display(description="of the fact", ordering="fact")
    def about(self, subject: Subject) -> str:
        return self.name_link(subject, "revision", subject.revision_id)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        subject = self.get_object(request, unquote(object_id))
        return to_fact_page(subject.fact_id, subject.revision.version)


@admin.register(Link)
class LinkAdmin(ReadOnlyAdmin):
    list_display = ["type", "source_fact", "target_fact", "confidence", "made_by", "created_at"]
    list_filter = ["tenant", "type"]
    search_fields = ["=source__id", "=target__id", "type"]
    list_select_related = ["tenant"]

    def names_wanted(self, link: Link) -> Iterable[tuple[str, Any]]:
        yield ("fact", link.source_id)
        yield ("fact", link.target_id)
        yield ("principal", link.created_by)

    @admin.display(description="from", ordering="source")
    def source_fact(self, link: Link) -> str:
        return self.name_link(link, "fact", link.source_id)

    @admin.display(description="to", ordering="target")
    def target_fact(self, link: Link) -> str:
        return self.name_link(link, "fact", link.target_id)

    @admin.display(description="created by", ordering="created_by")
    def made_by(self, link: Link) -> str:
        return self.name_link(link, "principal", link.created_by)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        link = self.get_object(request, unquote(object_id))
        return to_fact_page(link.source_id, part="#fact-links")


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

    list_display = ["fact_type", "tenant", "policy", "max_records", "dedup_scope", "mutable_fields"]
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
