"""The staff console: conversations and their messages, read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from console.tenant_wall import TenantScopedAdmin, person_link
from recall.models import Conversation, Message


class ReadOnlyAdmin(TenantScopedAdmin):
    """Conversations are the agents' record: staff read them; only the API and erasure write.
    Staff see their own tenant's (`console.tenant_wall`)."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("sequence", "role", "text", "created_at", "embedding_model")
    readonly_fields = fields
    ordering = ("sequence",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = (
        "thread_id",
        "tenant",
        "agent",
        "project",
        "participant",
        "person_user",
        "last_sequence",
        "created_at",
        "messages_link",
    )
    list_filter = ("tenant", "agent", "project")
    search_fields = ("thread_id", "participant_id", "user__username")
    list_select_related = ("tenant", "agent", "project", "user")
    # Newest first. Sorted, not read down an index: a tenant has one conversation per thread,
    # far fewer than its facts or messages.
    ordering = ("-created_at", "-id")
    date_hierarchy = "created_at"
    inlines = [MessageInline]

    @admin.display(description="participant", ordering="participant_id")
    def participant(self, obj: Conversation) -> str:
        return person_link("participant", obj.participant_id, obj.tenant_id)

    @admin.display(description="user", ordering="user")
    def person_user(self, obj: Conversation) -> str:
        if obj.user is None:
            return "—"
        return person_link("user", obj.user_id, obj.tenant_id, obj.user.username)

    @admin.display(description="messages")
    def messages_link(self, obj: Conversation) -> str:
        url = reverse("admin:recall_message_changelist") + f"?conversation__id__exact={obj.id}"
        return format_html('<a href="{}">{} messages</a>', url, obj.last_sequence)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("conversation", "sequence", "role", "short_text", "created_at", "embedded")
    list_filter = ("role", "tenant", "conversation__agent")
    search_fields = ("conversation__thread_id", "conversation__participant_id")
    list_select_related = ("conversation",)
    ordering = ("conversation", "sequence")
    exclude = ("embedding",)

    @admin.display(description="text")
    def short_text(self, obj: Message) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"

    @admin.display(description="embedded", boolean=True)
    def embedded(self, obj: Message) -> bool:
        return obj.embedding is not None
