"""The audit stream in the console: the API's filters, scoped to the staff member's tenant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.utils.html import format_html_join

from audit.models import AuditEvent, AuditPolicy
from console.lists import RecentValuesFilter
from console.tenant_wall import TenantScopedAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedAdmin):
    list_display = [
        "seq",
        "timestamp",
        "phase",
        "outcome",
        "error_code",
        "kind",
        "who",
        "agent",
        "endpoint",
        "about",
    ]
    # kind and who: the values of the newest events, not a DISTINCT over the whole stream
    list_filter = [
        "phase",
        "outcome",
        ("kind", RecentValuesFilter),
        ("principal_kind", RecentValuesFilter),
        "timestamp",
    ]
    search_fields = ["principal", "agent_id", "endpoint"]
    list_select_related = ["tenant"]
    # No date_hierarchy: its links are a DISTINCT over every event of the tenant, on each view;
    # the timestamp filter (today, past 7 days, this month, this year) reads no rows to show.
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

    def names_wanted(self, event: AuditEvent) -> Iterable[tuple[str, Any]]:
        yield ("principal", event.principal)
        yield ("agent", event.agent_id)
        for subject in event.subjects:
            yield ("person", subject)

    @admin.display(description="principal", ordering="principal")
    def who(self, event: AuditEvent) -> str:
        return self.name_link(event, "principal", event.principal)

    @admin.display(description="agent", ordering="agent_id")
    def agent(self, event: AuditEvent) -> str:
        return self.name_link(event, "agent", event.agent_id) if event.agent_id else "—"

    @admin.display(description="about")
    def about(self, event: AuditEvent) -> str:
        """The people the touched rows are about, each a link to their page."""
        links = [(self.name_link(event, "person", subject),) for subject in event.subjects]
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
