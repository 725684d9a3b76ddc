"""The console's erasure pages (wired into the admin by `ErasureRequestAdmin.get_urls`): start
one in two steps (the form, then its preview, confirmed), "was this id erased?", and an
erasure's status page with its live progress and its receipt.

Starting an erasure and the lookup are for privacy officers (`console_officer`); the start goes
through the same service as the API (`erasure_start`).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from api.errors import KindmemError
from console.names import Names
from console.tenant_wall import person_url
from kindmem.models import SubjectKind, Tenant
from kindmem.subjects import Subject
from privacy import services
from privacy.console_forms import ErasureConfirmForm, ErasureLookupForm, ErasureStartForm, prefilled
from privacy.erasure import ErasurePreview, erasure_preview
from privacy.models import ErasureRequest, RequestStatus
from privacy.permissions import console_officer


def progress_html(erasure: ErasureRequest) -> str:
    summary = erasure.progress_summary
    return format_html(
        '<progress class="erasure-progress" value="{}" max="{}"></progress> {} / {}',
        summary["done"],
        summary["total"] or 1,
        summary["done"],
        summary["total"],
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


def start_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Start an erasure in two steps: the form, then its preview (`erasure_preview`: what
    it would erase, what legal hold keeps, "nothing matches" said plainly), confirmed
    with a second POST. The preview is computed again on confirmation, so what is
    confirmed is what the officer saw or, if the data changed in between, a fresh preview
    shown again for nothing-matches."""
    if not console_officer(request):
        raise PermissionDenied
    step = request.POST.get("step", "preview") if request.method == "POST" else "form"
    form = ErasureStartForm(
        request.POST or None,
        request=request,
        initial=prefilled(request, "target_kind", "target_id"),
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
                        return _start(model_admin, request, form, tenant.id, subject)
                    except KindmemError as exc:
                        form.add_error(None, exc.message)
            if not form.errors:
                return _preview_page(model_admin, request, form, confirm, tenant, preview)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Start an erasure",
        "form": form,
        "submit_label": "Preview the erasure",
    }
    return TemplateResponse(request, "admin/privacy/start.html", context)


def _start(
    model_admin: ModelAdmin,
    request: HttpRequest,
    form: ErasureStartForm,
    tenant_id: uuid.UUID,
    subject: Subject,
) -> HttpResponse:
    erasure = services.erasure_start(
        tenant_id=tenant_id,
        target_kind=subject.kind.value,
        target_id=subject.id,
        reason=form.cleaned_data["reason"],
        requested_by=f"staff:{request.user.pk}",
    )
    model_admin.message_user(request, "Erasure accepted; a worker is erasing.")
    return HttpResponseRedirect(reverse("admin:privacy_erasurerequest_status", args=[erasure.pk]))


def _preview_page(
    model_admin: ModelAdmin,
    request: HttpRequest,
    form: ErasureStartForm,
    confirm: ErasureConfirmForm,
    tenant: Tenant,
    preview: ErasurePreview,
) -> HttpResponse:
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
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


def lookup_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """ "Was this id erased?": the id is hashed into its target reference and compared
    with every erasure's, finished ones included; it is neither stored nor logged (a POST,
    so it stays out of URLs)."""
    if not console_officer(request):
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
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Was this id erased?",
        "form": form,
        "found": found,
        "subject": subject,
    }
    return TemplateResponse(request, "admin/privacy/erasurerequest/lookup.html", context)


def status_view(
    model_admin: ModelAdmin, request: HttpRequest, erasure_id: uuid.UUID
) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    erasure = get_object_or_404(
        model_admin.get_queryset(request).select_related("tenant"), pk=erasure_id
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
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


def progress_json(
    model_admin: ModelAdmin, request: HttpRequest, erasure_id: uuid.UUID
) -> JsonResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    erasure = get_object_or_404(model_admin.get_queryset(request), pk=erasure_id)
    return JsonResponse({"status": erasure.status, **erasure.progress_summary})
