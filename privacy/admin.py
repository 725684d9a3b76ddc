"""The staff console for privacy requests: erasures with a live progress bar and their
receipt, subject access requests with their (expiring, audited) downloads.

Starting an erasure or an access request from the console is for privacy officers
(superusers, or staff in the `privacy-officer` group) and goes through the same services as
the API (`erasure_start`, `access_request_start`). The erasure pages are
privacy/erasure_pages.py, the person page privacy/person_pages.py, the forms
privacy/console_forms.py.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from api.errors import KindmemError
from console.tenant_wall import TenantScopedAdmin, is_platform_staff, person_link
from privacy import erasure_pages, person_pages, services
from privacy.console_forms import AccessRequestStartForm, prefilled
from privacy.erasure_pages import progress_html
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.permissions import console_officer

# The front page per role (privacy/front_page.py): set here, in the app that sees every other.
admin.site.index_template = "admin/console/index.html"


class OfficerViewable:
    """Privacy officers see the privacy pages by their role (the group), without needing
    Django's per-model view permissions as well."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return console_officer(request) or super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return console_officer(request) or super().has_view_permission(request, obj)


@admin.register(ErasureRequest)
class ErasureRequestAdmin(OfficerViewable, TenantScopedAdmin):
    """The list fits a 1366 px window beside the menu and the filters: the erasure by the
    start of its id (all of it on hover, and found by the search), the tenant for platform
    staff only, a short progress bar (templates/admin/privacy/erasurerequest/change_list.html)."""

    list_display = [
        "erasure",
        "tenant",
        "target_kind",
        "status",
        "progress_bar",
        "created_at",
        "finished_at",
    ]
    list_display_links = ["erasure"]
    list_filter = ["status", "target_kind", "tenant"]
    search_fields = ["id", "requested_by"]
    list_select_related = ["tenant"]
    ordering = ["-created_at"]
    change_list_template = "admin/privacy/erasurerequest/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # started through the "Start an erasure" page (erasure_start)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        """An erasure's page is its status page (progress, receipt), not a form of raw fields
        ("Total estimate: 6" beside "10 / 10 records")."""
        erasure = self.get_object(request, object_id)  # another tenant's: a 404
        if not self.has_view_permission(request, erasure):
            raise PermissionDenied
        return HttpResponseRedirect(
            reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
        )

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        # a tenant's own staff see their tenant's erasures only: its name on every row says
        # nothing
        return shown if is_platform_staff(request) else [c for c in shown if c != "tenant"]

    @admin.display(description="erasure", ordering="created_at")
    def erasure(self, erasure: ErasureRequest) -> str:
        return format_html('<span title="{}">{}</span>', erasure.pk, str(erasure.pk)[:8])

    @admin.display(description="progress")
    def progress_bar(self, erasure: ErasureRequest) -> str:
        url = reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
        return format_html('<a href="{}">{}</a>', url, progress_html(erasure))

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("start/", view(self.start_view), name="privacy_erasurerequest_start"),
            path("lookup/", view(self.lookup_view), name="privacy_erasurerequest_lookup"),
            path(
                "<uuid:erasure_id>/status/",
                view(self.status_view),
                name="privacy_erasurerequest_status",
            ),
            path(
                "<uuid:erasure_id>/progress.json",
                view(self.progress_json),
                name="privacy_erasurerequest_progress",
            ),
            *super().get_urls(),
        ]

    def start_view(self, request: HttpRequest) -> HttpResponse:
        return erasure_pages.start_view(self, request)

    def lookup_view(self, request: HttpRequest) -> HttpResponse:
        return erasure_pages.lookup_view(self, request)

    def status_view(self, request: HttpRequest, erasure_id: uuid.UUID) -> HttpResponse:
        return erasure_pages.status_view(self, request, erasure_id)

    def progress_json(self, request: HttpRequest, erasure_id: uuid.UUID) -> JsonResponse:
        return erasure_pages.progress_json(self, request, erasure_id)


@admin.register(AccessRequest)
class AccessRequestAdmin(OfficerViewable, TenantScopedAdmin):
    list_display = [
        "id",
        "tenant",
        "subject_kind",
        "person",
        "status",
        "created_at",
        "download",
    ]
    list_filter = ["status", "subject_kind", "tenant"]
    search_fields = ["id", "subject_id", "requested_by"]
    list_select_related = ["tenant"]
    ordering = ["-created_at"]
    exclude = ["export_json", "export_zip"]
    change_list_template = "admin/privacy/accessrequest/change_list.html"

    def get_queryset(self, request: HttpRequest) -> Any:
        # The list never loads the exports themselves.
        return super().get_queryset(request).defer("export_json", "export_zip")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # through the "New access request" page (access_request_start)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="subject", ordering="subject_id")
    def person(self, access: AccessRequest) -> str:
        return person_link(access.subject_kind, access.subject_id, access.tenant_id)

    @admin.display(description="download")
    def download(self, access: AccessRequest) -> str:
        if access.status != RequestStatus.COMPLETED:
            return "—"
        token = services.access_export_token(request=access)
        links = [
            format_html(
                '<a href="{}?token={}">{}</a>',
                reverse("admin:privacy_accessrequest_download", args=[access.pk, fmt]),
                token,
                fmt,
            )
            for fmt in ("json", "zip")
        ]
        return format_html("{} · {}", links[0], links[1])

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("start/", view(self.start_view), name="privacy_accessrequest_start"),
            path("person/", view(self.person_view), name="privacy_person"),
            path(
                "<uuid:request_id>/download/<str:fmt>/",
                view(self.download_view),
                name="privacy_accessrequest_download",
            ),
            *super().get_urls(),
        ]

    def start_view(self, request: HttpRequest) -> HttpResponse:
        if not console_officer(request):
            raise PermissionDenied
        form = AccessRequestStartForm(
            request.POST or None,
            request=request,
            initial=prefilled(request, "subject_kind", "subject_id"),
        )
        if request.method == "POST" and form.is_valid():
            tenant = form.cleaned_data["tenant"]
            try:
                services.access_request_start(
                    actor=services.Actor.of_staff(request.user, tenant.id),
                    subject_kind=form.cleaned_data["subject_kind"],
                    subject_id=form.cleaned_data["subject_id"],
                    endpoint="POST console access-request",
                )
            except KindmemError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(request, "Access request accepted; a worker builds the export.")
                return HttpResponseRedirect(reverse("admin:privacy_accessrequest_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "New subject access request",
            "form": form,
        }
        return TemplateResponse(request, "admin/privacy/start.html", context)

    def person_view(self, request: HttpRequest) -> HttpResponse:
        """A person's page, or the search for one (privacy/person_pages.py)."""
        return person_pages.person_view(self, request)

    def download_view(self, request: HttpRequest, request_id: uuid.UUID, fmt: str) -> HttpResponse:
        if not console_officer(request):
            raise PermissionDenied
        access = get_object_or_404(
            self.get_queryset(request).only("id", "tenant_id"), pk=request_id
        )
        try:
            export = services.access_export_open(
                actor=services.Actor.of_staff(request.user, access.tenant_id),
                request_id=access.id,
                token=request.GET.get("token", ""),
                fmt="zip" if fmt == "zip" else "json",
                endpoint="GET console access-export",
            )
        except KindmemError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:privacy_accessrequest_changelist"))
        response = HttpResponse(export.content, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.name}"'
        return response
