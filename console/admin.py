"""The staff console for tenancy and credentials."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest
from django.utils.html import format_html

from api.errors import ValidationFailed
from console.tenant_wall import TenantScopedAdmin, is_platform_staff, person_link
from kindmem import services
from kindmem.models import Agent, ApiKey, Org, Project, Run, Tenant, User, WorkerHeartbeat

admin.site.site_header = "kindmem console"
# every page's <title> ends with it: "Erasure requests | kindmem console"
admin.site.site_title = "kindmem console"
admin.site.index_title = "Memory, review and privacy"


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    """A tenant staff member sees their own tenant only; tenants are made by platform staff."""

    list_display = ["name", "id", "created_at"]
    list_filter = ["created_at"]
    search_fields = ["name", "id"]
    list_select_related: list[str] = []
    ordering = ["name"]  # unique

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_platform_staff(request) and super().has_add_permission(request)


@admin.register(Org)
class OrgAdmin(TenantScopedAdmin):
    list_display = ["name", "tenant", "id"]
    list_filter = ["tenant"]
    search_fields = ["name", "id"]
    list_select_related = ["tenant"]
    ordering = ["name", "id"]  # a name is unique within its tenant


@admin.register(Project)
class ProjectAdmin(TenantScopedAdmin):
    list_display = ["name", "org", "tenant", "id"]
    list_filter = ["tenant", "org"]
    search_fields = ["name", "id"]
    list_select_related = ["tenant", "org"]
    ordering = ["name", "id"]


@admin.register(User)
class UserAdmin(TenantScopedAdmin, DjangoUserAdmin):
    """Users of the staff member's tenant; a tenant staff member's new user is of their tenant
    (the tenant field is preselected and hidden), never a tenantless platform user."""

    list_display = ["username", "email", "tenant", "is_staff", "is_active"]
    list_filter = ["tenant", "is_staff", "is_active", "groups"]
    search_fields = ["username", "email", "id"]
    list_select_related = ["tenant"]
    fieldsets = (
        *DjangoUserAdmin.fieldsets,
        ("Tenancy", {"fields": ("tenant", "orgs", "projects")}),
    )
    filter_horizontal = ("groups", "user_permissions", "orgs", "projects")
    add_fieldsets = (
        *DjangoUserAdmin.add_fieldsets,
        ("Tenancy", {"fields": ("tenant",)}),
    )


admin.site.unregister(Group)


@admin.register(Group)
class GroupAdmin(TenantScopedAdmin, DjangoGroupAdmin):
    """The roles (reviewer, privacy-officer, ...) are the same in every tenant, so only platform
    staff define them: a tenant's staff may see them (to give one to a user of their tenant),
    never rename them or change what they allow for every other tenant."""

    list_display = ["name"]
    list_filter: list[str] = []
    list_select_related: list[str] = []

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_platform_staff(request) and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_platform_staff(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_platform_staff(request) and super().has_delete_permission(request, obj)


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    list_display = ["agent_id", "version", "name", "tenant"]
    list_filter = ["tenant"]
    search_fields = ["agent_id", "name"]
    list_select_related = ["tenant"]
    ordering = ["agent_id", "id"]  # an agent_id is unique within its tenant


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["tenant", "kind", "name", "user", "projects"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("tenant") is not None and data.get("kind"):
            try:
                services.api_key_check(
                    tenant=data["tenant"],
                    kind=data["kind"],
                    user=data.get("user"),
                    projects=data.get("projects") or (),
                )
            except ValidationFailed as exc:
                raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin):
    list_display = [
        "name",
        "kind",
        "tenant",
        "user",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["kind", "tenant", "revoked_at"]
    search_fields = ["name", "prefix"]
    list_select_related = ["tenant", "user"]
    ordering = ["-created_at", "id"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    filter_horizontal = ["projects"]
    actions = ["revoke"]

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        # Revocation is permanent and is how a key ends (with its runs); deleting one would
        # lose who wrote what, and the runs it minted keep their rows (facts and run logs
        # name them). No delete page, no "delete selected" action.
        return False

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: Any, obj: Any = None) -> list[str]:
        if obj is None:
            return ["tenant", "kind", "name", "user", "projects"]
        return ["tenant", "kind", "name", "user", "projects", *self.readonly_fields]

    def get_readonly_fields(self, request: Any, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["tenant", "kind", "user", *self.readonly_fields]

    def save_model(self, request: Any, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        key, token = services.api_key_create(
            tenant=obj.tenant,
            kind=obj.kind,
            name=obj.name,
            user=obj.user,
            projects=form.cleaned_data.get("projects") or (),
        )
        obj.pk = key.pk
        self.message_user(
            request, f"Key created. Copy it now, it is not shown again: {token}", messages.WARNING
        )

    def save_related(self, request: Any, form: Any, formsets: Any, change: bool) -> None:
        if change:
            super().save_related(request, form, formsets, change)

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: Any, queryset: Any) -> None:
        revoked = sum(services.api_key_revoke(key=key) for key in queryset.order_by("pk"))
        self.message_user(request, f"Revoked {revoked} key(s).", messages.SUCCESS)


@admin.register(Run)
class RunAdmin(TenantScopedAdmin):
    list_display = [
        "run",
        "agent",
        "project",
        "participant",
        "person_user",
        "thread_id",
        "created_at",
        "expires_at",
    ]
    list_filter = ["tenant", "agent", "project"]
    search_fields = ["id", "participant_id", "thread_id", "session_id"]
    list_select_related = ["agent", "project", "user"]
    exclude = ["token_hash"]
    ordering = ["-created_at", "id"]

    @admin.display(description="run", ordering="created_at")
    def run(self, run: Run) -> str:
        return format_html(
            '{} <span class="km-id" title="{}">{}</span>',
            run.agent.name or run.agent.agent_id,
            run.pk,
            str(run.pk)[:8],
        )

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    @admin.display(description="participant", ordering="participant_id")
    def participant(self, run: Run) -> str:
        return person_link("participant", run.participant_id, run.tenant_id)

    @admin.display(description="user", ordering="user")
    def person_user(self, run: Run) -> str:
        if run.user is None:
            return "—"
        return person_link("user", run.user_id, run.tenant_id, run.user.username)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(TenantScopedAdmin):
    """Written by the workers' heartbeat task only: read here, never added or edited."""

    list_display = ["hostname", "seen_at"]
    list_filter = ["seen_at"]
    search_fields = ["hostname"]
    list_select_related: list[str] = []

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
