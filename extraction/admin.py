"""The console's extraction pages: a tenant's settings (send every extracted memory to review;
the agents whose conversations are extracted after each appended batch), and the jobs, read
only, with why one was refused or failed. What a job proposed is decided in the review queue
(approvals), which shows each proposal's diff and the messages it cites."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from audit.console import console_read_record
from console.tenant_wall import TenantScopedAdmin
from extraction.models import ExtractionJob, ExtractionSettings


@admin.register(ExtractionSettings)
class ExtractionSettingsAdmin(TenantScopedAdmin):
    list_display = ["tenant", "review_all", "after_append"]
    list_filter = ["review_all"]
    search_fields = ["tenant__name"]
    list_select_related = ["tenant"]
    ordering = ["tenant__name"]
    fields = ["tenant", "review_all", "extract_after_append"]

    @admin.display(description="extract after each batch")
    def after_append(self, obj: ExtractionSettings) -> str:
        return ", ".join(obj.extract_after_append) or "—"


@admin.register(ExtractionJob)
class ExtractionJobAdmin(TenantScopedAdmin):
    list_display = [
        "created_at",
        "conversation_thread",
        "status",
        "message_range",
        "model",
        "tokens_in",
        "tokens_out",
        "error_code",
    ]
    list_filter = ["status", "error_code", "agent"]
    search_fields = ["=id", "=conversation__thread_id"]
    list_select_related = ["conversation", "agent"]
    ordering = ["-created_at", "-id"]
    # the refused answer stays out of the console: the conversation's words, for the operator's
    # database only (and erased with the conversation)
    fields = [
        "conversation_thread",
        "agent",
        "status",
        "message_range",
        "requested_by",
        "attempts",
        "model",
        "prompt_version",
        "response_format",
        "tokens_in",
        "tokens_out",
        "usage_estimated",
        "error_code",
        "error",
        "created_at",
        "started_at",
        "finished_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="conversation", ordering="conversation__thread_id")
    def conversation_thread(self, obj: ExtractionJob) -> str:
        return obj.conversation.thread_id

    @admin.display(description="messages")
    def message_range(self, obj: ExtractionJob) -> str:
        return f"#{obj.first_sequence} to #{obj.last_sequence}"

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        """A job's page: its error may quote the model's answer, so opening it is a read of
        the conversation's person, audited."""
        job = self.get_object(request, object_id)
        conversation = job.conversation
        person = (
            [f"participant:{conversation.participant_id}"]
            if conversation.participant_id
            else [f"user:{conversation.user_id}"]
            if conversation.user_id
            else []
        )
        console_read_record(
            user=request.user,
            tenant_id=job.tenant_id,
            kind="message",
            object_ids=[job.id],
            subjects=person,
            endpoint="GET console extraction job",
        )
        return super().change_view(request, object_id, form_url, extra_context)
