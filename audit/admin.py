"""The audit stream in the console: the API's filters, scoped to the staff member's tenant."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.html import format_html_join

from audit.models import AuditEvent, AuditPolicy
from kindmem.console import TenantScopedAdmin, person_link


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedAdmin):
    list_display = [
        "seq",
        "timestamp",
        "phase",
        "outcome",
        "error_code",
        "kind",
        "principal",
        "agent_id",
        "endpoint",
        "about",
    ]
    list_filter = ["phase", "outcome", "kind", "principal_kind", "timestamp"]
    search_fields = ["principal", "agent_id", "endpoint"]
    list_select_related = ["tenant"]
    date_hierarchy = "timestamp"
    ordering = ["-seq"]

    def get_search_results(self, request: Any, queryset: Any, search_term: str) -> Any:
        """A subject ("participant:p-1") or a fact/message id matches through the GIN indexes."""
        term = search_term.strip()
        if term.split(":", 1)[0] in {"participant", "user", "external"}:
            return queryset.about_subject(term), False
        if term:
            touching = queryset.touching(term)
            if touching.exists():
                return touching, False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="about")
    def about(self, event: AuditEvent) -> str:
        """The people the touched rows are about, each a link to their page."""
        links = []
        for subject in event.subjects:
            kind, _, subject_id = subject.partition(":")
            links.append((person_link(kind, subject_id, event.tenant_id, subject),))
        return format_html_join(", ", "{}", links) if links else "—"

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(AuditPolicy)
class AuditPolicyAdmin(TenantScopedAdmin):
    list_display = ["tenant", "retention_days", "record_query_text"]
    list_filter = ["record_query_text"]
    search_fields = ["tenant__name"]
    list_select_related = ["tenant"]
