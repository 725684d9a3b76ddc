"""The console's run log: entries (read-only) and a run's log as a timeline, with a verify
button."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from audit.console import console_read_record
from console.names import Names
from console.tenant_wall import TenantScopedAdmin, console_scope
from kindmem.models import Run
from runlog.models import LogEntry
from runlog.verify import verify_run

# A timeline page shows at most this many entries (the API pages through longer logs).
TIMELINE_LIMIT = 500


@admin.register(LogEntry)
class LogEntryAdmin(TenantScopedAdmin):
    list_display = ["entry", "of_run", "kind", "hash_version", "erased", "created_at", "timeline"]
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

    def names_wanted(self, entry: LogEntry) -> Iterable[tuple[str, Any]]:
        yield ("run", entry.run_id)

    @admin.display(description="entry", ordering="sequence")
    def entry(self, entry: LogEntry) -> str:
        return f"#{entry.sequence}"

    @admin.display(description="run", ordering="run")
    def of_run(self, entry: LogEntry) -> str:
        return self.name_link(entry, "run", entry.run_id)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        """An entry is shown in its run's timeline, payload, hashes and all: its page is that
        place on it."""
        entry = self.get_object(request, unquote(object_id))  # another tenant's: a 404
        url = reverse("admin:runlog_logentry_timeline", args=[entry.run_id])
        return HttpResponseRedirect(f"{url}#entry-{entry.sequence}")

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
        entries = list(
            LogEntry.objects.of_run(run)
            .select_related("caused_by")
            .only(*(f.name for f in LogEntry._meta.concrete_fields), "caused_by__sequence")
            .order_by("sequence")[: TIMELINE_LIMIT + 1]
        )
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
        names = Names(request, tenant_id=run.tenant_id)
        names.want("project", run.project_id)
        names.want("agent", run.agent.agent_id)
        people = [f"participant:{run.participant_id}"] if run.participant_id else []
        people += [f"user:{run.user_id}"] if run.user_id else []
        names.want_all("person", people)
        # The payloads are what the agent did for the run's person: reading them is audited.
        console_read_record(
            user=request.user,
            tenant_id=run.tenant_id,
            kind="log",
            object_ids=[run.pk, *(row["entry"].pk for row in rows)],
            subjects=people,
            endpoint=f"{request.method} console run-log",
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": (
                f"Run log of {run.agent.name or run.agent.agent_id}, "
                f"{run.created_at:%d %b %Y %H:%M}"
            ),
            "run": run,
            "names": names,
            "people": people,
            "rows": rows,
            "truncated": len(entries) > TIMELINE_LIMIT,
            "limit": TIMELINE_LIMIT,
            "verification": verification,
        }
        return TemplateResponse(request, "admin/runlog/logentry/timeline.html", context)
