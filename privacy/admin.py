"""The staff console for privacy requests: erasures with a live progress bar and their
receipt, subject access requests with their (expiring, audited) downloads.

Starting an erasure or an access request from the console is for privacy officers
(superusers, or staff in the `privacy-officer` group) and goes through the same services as
the API (`erasure_start`, `access_request_start`).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from kindmem.console import (
    TenantScopedAdmin,
    confine_tenant_field,
    person_link,
    person_url,
)
from kindmem.console_names import Names
from kindmem.errors import KindmemError
from kindmem.models import SubjectKind, Tenant
from kindmem.subjects import Subject
from privacy import person_pages, services
from privacy.erasure import ErasurePreview, erasure_preview
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.permissions import is_privacy_officer
from privacy.serializers import PERSON_KINDS

# The front page per role (privacy/front_page.py): set here, in the app that sees every other.
admin.site.index_template = "admin/console/index.html"


def _officer(request: HttpRequest) -> bool:
    user = request.user
    return bool(
        user.is_active and user.is_staff and (user.is_superuser or is_privacy_officer(user))
    )


def _prefilled(request: HttpRequest, *names: str) -> dict[str, str]:
    """A start form's person, filled in from the link that led to it (a person's page)."""
    return {name: request.GET[name][:200] for name in names if name in request.GET}


def progress_html(erasure: ErasureRequest) -> str:
    summary = erasure.progress_summary
    return format_html(
        '<progress class="erasure-progress" value="{}" max="{}"></progress> {} / {}',
        summary["done"],
        summary["total"] or 1,
        summary["done"],
        summary["total"],
    )


class TenantStartForm(forms.Form):
    """A start form's tenant: one of the officer's tenants (their own, preselected and hidden;
    any for platform staff), so another tenant's id is a form error, not a refused write."""

    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"))

    def __init__(self, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        confine_tenant_field(request, cast(forms.ModelChoiceField, self.fields["tenant"]))


class ErasureStartForm(TenantStartForm):
    target_kind = forms.ChoiceField(
        choices=SubjectKind.choices,
        label="Erase a",
        help_text=(
            "A participant is an app's end user (the id the app gives them); a user is a Kindgi "
            "account (its UUID); a conversation is one thread; an external id names someone "
            "in facts' subjects."
        ),
    )
    target_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Exactly as kindmem stores it. The next page shows what it matches.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Kept in the receipt: how the request reached you (it names no one).",
    )


class ErasureConfirmForm(forms.Form):
    """The preview page's one question, asked only when nothing matches the id."""

    nothing_matches_confirmed = forms.BooleanField(
        required=False,
        label="Nothing matches this id: erase it anyway (the receipt will show nothing erased)",
    )


class ErasureLookupForm(TenantStartForm):
    target_kind = forms.ChoiceField(choices=SubjectKind.choices, label="Kind")
    target_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Checked against the erasures' target references; it is not stored.",
    )


# How the preview and the receipt name each kind of row (`BatchResult.erased` kinds).
KIND_LABELS = {
    "fact": ("fact", "facts"),
    "revision": ("revision", "revisions"),
    "link": ("link between facts", "links between facts"),
    "attribution": (
        "revision they wrote (their id taken off)",
        "revisions they wrote (their id taken off)",
    ),
    "approval": ("review record", "review records"),
    "reviewer": (
        "review decision they took (their id taken off)",
        "review decisions they took (their id taken off)",
    ),
    "conversation": ("conversation", "conversations"),
    "message": ("message", "messages"),
    "run": ("run whose log is cleared", "runs whose logs are cleared"),
    "thread": ("thread record", "thread records"),
    "access-request": ("access request and its export", "access requests and their exports"),
    "audit-event": (
        "audit event naming them (the id removed)",
        "audit events naming them (the id removed)",
    ),
}


def kind_rows(counts: dict[str, int]) -> list[dict[str, Any]]:
    """The preview's or the receipt's counts as rows for a table, in the labels' order."""
    order = list(KIND_LABELS)
    rows = []
    for kind in sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k)):
        one, many = KIND_LABELS.get(kind, (kind, kind))
        rows.append(
            {"kind": kind, "count": counts[kind], "label": one if counts[kind] == 1 else many}
        )
    return rows


class AccessRequestStartForm(TenantStartForm):
    subject_kind = forms.ChoiceField(
        choices=[(k.value, k.label) for k in PERSON_KINDS],
        label="Export everything about a",
        help_text=(
            "A participant is an app's end user (the id the app gives them); a user is a Kindgi "
            "account (its UUID); an external id names someone in facts' subjects."
        ),
    )
    subject_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Exactly as kindmem stores it. A worker builds the export (JSON and a zip).",
    )


class OfficerViewable:
    """Privacy officers see the privacy pages by their role (the group), without needing
    Django's per-model view permissions as well."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _officer(request) or super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _officer(request) or super().has_view_permission(request, obj)


@admin.register(ErasureRequest)
class ErasureRequestAdmin(OfficerViewable, TenantScopedAdmin):
    list_display = [
        "id",
        "tenant",
        "target_kind",
        "status",
        "progress_bar",
        "created_at",
        "finished_at",
    ]
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
        """Start an erasure in two steps: the form, then its preview (`erasure_preview`: what
        it would erase, what legal hold keeps, "nothing matches" said plainly), confirmed
        with a second POST. The preview is computed again on confirmation, so what is
        confirmed is what the officer saw or, if the data changed in between, a fresh preview
        shown again for nothing-matches."""
        if not _officer(request):
            raise PermissionDenied
        step = request.POST.get("step", "preview") if request.method == "POST" else "form"
        form = ErasureStartForm(
            request.POST or None,
            request=request,
            initial=_prefilled(request, "target_kind", "target_id"),
        )
        if step in ("preview", "confirm") and form.is_valid():
            tenant = form.cleaned_data["tenant"]
            try:
                subject = Subject.parse(
                    form.cleaned_data["target_kind"], form.cleaned_data["target_id"]
                )
            except KindmemError as exc:
                form.add_error("target_id", exc.message)
            else:
                preview = erasure_preview(tenant_id=tenant.id, subject=subject)
                confirm = ErasureConfirmForm(request.POST if step == "confirm" else None)
                if step == "confirm" and confirm.is_valid():
                    if (
                        preview.nothing_matches
                        and not confirm.cleaned_data["nothing_matches_confirmed"]
                    ):
                        confirm.add_error(
                            "nothing_matches_confirmed",
                            "Nothing matches this id. Tick the box to erase it anyway, or go "
                            "back and correct the id.",
                        )
                    else:
                        try:
                            return self._start(request, form, tenant.id, subject)
                        except KindmemError as exc:
                            form.add_error(None, exc.message)
                if not form.errors:
                    return self._preview_page(request, form, confirm, tenant, preview)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Start an erasure",
            "form": form,
            "submit_label": "Preview the erasure",
        }
        return TemplateResponse(request, "admin/privacy/start.html", context)

    def _start(
        self, request: HttpRequest, form: ErasureStartForm, tenant_id: uuid.UUID, subject: Subject
    ) -> HttpResponse:
        erasure = services.erasure_start(
            tenant_id=tenant_id,
            target_kind=subject.kind.value,
            target_id=subject.id,
            reason=form.cleaned_data["reason"],
            requested_by=f"staff:{request.user.pk}",
        )
        self.message_user(request, "Erasure accepted; a worker is erasing.")
        return HttpResponseRedirect(
            reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
        )

    def _preview_page(
        self,
        request: HttpRequest,
        form: ErasureStartForm,
        confirm: ErasureConfirmForm,
        tenant: Tenant,
        preview: ErasurePreview,
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Erase {preview.subject.kind.value} {preview.subject.id}?",
            "form": form,
            "confirm": confirm,
            "tenant": tenant,
            "preview": preview,
            "rows": [row for row in kind_rows(preview.counts) if row["count"]],
            "person_url": (
                person_url(preview.subject.kind.value, preview.subject.id, tenant.id)
                if preview.subject.kind != SubjectKind.CONVERSATION
                else None
            ),
        }
        return TemplateResponse(request, "admin/privacy/erasurerequest/preview.html", context)

    def lookup_view(self, request: HttpRequest) -> HttpResponse:
        """ "Was this id erased?": the id is hashed into its target reference and compared
        with every erasure's, finished ones included; it is neither stored nor logged (a POST,
        so it stays out of URLs)."""
        if not _officer(request):
            raise PermissionDenied
        form = ErasureLookupForm(request.POST or None, request=request)
        found = None
        subject = None
        if request.method == "POST" and form.is_valid():
            try:
                subject = Subject.parse(
                    form.cleaned_data["target_kind"], form.cleaned_data["target_id"]
                )
            except KindmemError as exc:
                form.add_error("target_id", exc.message)
            else:
                found = list(
                    ErasureRequest.objects.of_subject(form.cleaned_data["tenant"].id, subject)
                    .select_related("tenant")
                    .order_by("-created_at")
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Was this id erased?",
            "form": form,
            "found": found,
            "subject": subject,
        }
        return TemplateResponse(request, "admin/privacy/erasurerequest/lookup.html", context)

    def status_view(self, request: HttpRequest, erasure_id: uuid.UUID) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        erasure = get_object_or_404(
            self.get_queryset(request).select_related("tenant"), pk=erasure_id
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Erasure {erasure.id}",
            "erasure": erasure,
            "summary": erasure.progress_summary,
            "finished": erasure.status in (RequestStatus.COMPLETED, RequestStatus.FAILED),
            "receipt_text": (
                json.dumps(erasure.receipt, indent=2, sort_keys=True) if erasure.receipt else None
            ),
            "receipt_rows": kind_rows((erasure.receipt or {}).get("counts_by_kind", {})),
            "requested_by": Names(request, tenant_id=erasure.tenant_id).link(
                "principal", erasure.requested_by
            ),
            "progress_url": reverse("admin:privacy_erasurerequest_progress", args=[erasure.pk]),
        }
        return TemplateResponse(request, "admin/privacy/erasurerequest/status.html", context)

    def progress_json(self, request: HttpRequest, erasure_id: uuid.UUID) -> JsonResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        erasure = get_object_or_404(self.get_queryset(request), pk=erasure_id)
        return JsonResponse({"status": erasure.status, **erasure.progress_summary})


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
        if not _officer(request):
            raise PermissionDenied
        form = AccessRequestStartForm(
            request.POST or None,
            request=request,
            initial=_prefilled(request, "subject_kind", "subject_id"),
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
        if not _officer(request):
            raise PermissionDenied
        access = get_object_or_404(
            self.get_queryset(request).only("id", "tenant_id"), pk=request_id
        )
        try:
            content, content_type, name = services.access_export_open(
                actor=services.Actor.of_staff(request.user, access.tenant_id),
                request_id=access.id,
                token=request.GET.get("token", ""),
                fmt="zip" if fmt == "zip" else "json",
                endpoint="GET console access-export",
            )
        except KindmemError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:privacy_accessrequest_changelist"))
        response = HttpResponse(content, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
