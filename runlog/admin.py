"""The console's run log: entries (read-only) and a run's log as a timeline, with a verify
button."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from kindmem.console import TenantScopedAdmin, console_scope
from kindmem.models import Run
from runlog.models import LogEntry
from runlog.verify import verify_run

# A timeline page shows at most this many entries (the API pages through longer logs).
TIMELINE_LIMIT = 500


@admin.register(LogEntry)
class LogEntryAdmin(TenantScopedAdmin):
    list_display = ["run", "sequence", "kind", "hash_version", "erased", "created_at", "timeline"]
    list_filter = ["kind", "hash_version", "tenant", "created_at"]
    search_fields = ["=run__id", "=entry_hash", "=content_hash"]
    list_select_related = ["run", "tenant"]
    ordering = ["-created_at"]
    readonly_fields = [f.name for f in LogEntry._meta.fields]

    # Append-only: the console reads the log; only `runlog.services` writes it.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(boolean=True, description="erased")
    def erased(self, entry: LogEntry) -> bool:
        return entry.is_erased

    @admin.display(description="timeline")
    def timeline(self, entry: LogEntry) -> str:
        url = reverse("admin:runlog_logentry_timeline", args=[entry.run_id])
        return format_html('<a href="{}">run timeline</a>', url)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "run/<uuid:run_id>/timeline/",
                self.admin_site.admin_view(self.timeline_view),
                name="runlog_logentry_timeline",
            ),
            *super().get_urls(),
        ]

    def timeline_view(self, request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
        """A run's log, oldest first; POST (the Verify button) also recomputes its chain."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        runs = console_scope(request, Run.objects.select_related("tenant", "agent", "project"))
        run = get_object_or_404(runs, pk=run_id)
        entries = list(LogEntry.objects.of_run(run).order_by("sequence")[: TIMELINE_LIMIT + 1])
        rows = [
            {
                "entry": entry,
                # Rendered as text by the template (autoescaped): payloads come from agents.
                "payload_text": (
                    None
                    if entry.payload is None
                    else json.dumps(entry.payload, indent=2, ensure_ascii=False, sort_keys=True)
                ),
            }
            for entry in entries[:TIMELINE_LIMIT]
        ]
        verification = verify_run(run) if request.method == "POST" else None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Run log of {run.id}",
            "run": run,
            "rows": rows,
            "truncated": len(entries) > TIMELINE_LIMIT,
            "limit": TIMELINE_LIMIT,
            "verification": verification,
        }
        return TemplateResponse(request, "admin/runlog/logentry/timeline.html", context)
