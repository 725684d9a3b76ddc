"""The console's person page and its search box (wired into the admin by
`AccessRequestAdmin.get_urls`, so the tenant wall walks it with the rest of the console).

`/console/privacy/accessrequest/person/?subject=participant:p-42` shows everything kindmem
holds about the person (`privacy.people.person_record`); `?q=...` searches for people by id or
by words of a memory. Staff see the parts their role may see: reviewers the facts and review
records, privacy officers and superusers everything, requests and erasures included. Opening a
person's page is audited as a read of them (`person_page_audit`), so their access export lists
which staff looked.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from api.errors import ValidationFailed
from console.names import Names, agent_named, project_named
from console.tenant_wall import console_scope, the_only_tenant
from facts.console_names import fact_named
from kindmem.models import SubjectKind, Tenant
from kindmem.subjects import Subject
from privacy import services
from privacy.people import SECTIONS, PersonRecord, person_record, search_people
from privacy.permissions import is_privacy_officer
from recall.console_names import conversation_named
from runlog.console_names import entry_named, run_named

# The permission that opens each part of the page to a role other than a privacy officer.
SECTION_PERMISSIONS = {
    "facts": "facts.view_fact",
    "approvals": "approvals.view_approval",
    "conversations": "recall.view_conversation",
    "runs": "runlog.view_logentry",
    "reads": "audit.view_auditevent",
}


def person_sections(request: HttpRequest) -> set[str]:
    """The parts of a person's page this staff member may see (none: no page)."""
    user = request.user
    if not (user.is_active and user.is_staff):
        return set()
    if user.is_superuser or is_privacy_officer(user):
        return set(SECTIONS)
    return {name for name, perm in SECTION_PERMISSIONS.items() if user.has_perm(perm)}


def _tenant(request: HttpRequest) -> Tenant | None:
    """The tenant the page is about: `?tenant=` if this user may see it (else a 404), or the
    one tenant they can name; None when platform staff must choose."""
    tenants = console_scope(request, Tenant.objects.all())
    wanted = request.GET.get("tenant", "")
    if wanted:
        try:
            tenant = tenants.filter(pk=uuid.UUID(wanted)).first()
        except ValueError:
            tenant = None
        if tenant is None:
            raise Http404("No such tenant.")
        return tenant
    only = the_only_tenant(request)
    return tenants.filter(pk=only).first() if only is not None else None


def _context(model_admin: ModelAdmin, request: HttpRequest, **extra: Any) -> dict[str, Any]:
    return {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "subject_kinds": SubjectKind.choices,
        "tenants": (
            list(console_scope(request, Tenant.objects.order_by("name")))
            if the_only_tenant(request) is None
            else []
        ),
        **extra,
    }


def person_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    sections = person_sections(request)
    if not sections:
        raise PermissionDenied
    tenant = _tenant(request)
    raw = request.GET.get("subject", "").strip()
    query = request.GET.get("q", "").strip()
    if not raw:
        return _search_page(model_admin, request, tenant, query)
    kind, _, subject_id = raw.partition(":")
    try:
        subject = Subject.parse(kind, subject_id)
    except ValidationFailed as exc:
        return _search_page(model_admin, request, tenant, raw, error=exc.message)
    if tenant is None:
        return _search_page(
            model_admin, request, tenant, raw, error="Choose the tenant this person is in."
        )
    record = person_record(tenant_id=tenant.id, subject=subject, sections=sections)
    if not record.is_empty:
        # A page that shows nothing about anyone read nothing: a mistyped id, or another
        # tenant's person, leaves no event naming an id this tenant does not hold.
        services.person_page_audit(
            actor=services.Actor.of_staff(request.user, tenant.id),
            subject=str(subject),
            object_ids=record.shown_fact_ids,
        )
    names = _names(request, tenant, record)
    context = _context(
        model_admin,
        request,
        title=f"{subject.kind.value} {subject.id}",
        tenant=tenant,
        record=record,
        subject=subject,
        sections=sections,
        names=names,
        is_officer="requests" in sections,
        query=str(subject),
    )
    return TemplateResponse(request, "admin/privacy/person.html", context)


def _names(request: HttpRequest, tenant: Tenant, record: PersonRecord) -> Names:
    """Everything the page names, wanted at once (one query per kind): who read, decided and
    asked; its rows' facts, agents, projects and runs, named from the rows already loaded."""
    names = Names(request, tenant_id=tenant.id)
    reads = record.reads.rows if record.reads else []
    approvals = record.approvals.rows if record.approvals else []
    runs = record.runs.rows if record.runs else []
    conversations = record.conversations.rows if record.conversations else []
    names.want_all("principal", [e.principal for e in reads])
    names.want_all("agent", [e.agent_id for e in reads])
    names.want_all("principal", [a.decided_by for a in approvals])
    names.want_all("principal", [r.requested_by for r in record.access_requests])
    names.want_all("principal", [r.requested_by for r in record.erasures])
    for fact in record.facts.rows if record.facts else []:
        names.add("fact", fact.pk, fact_named(request, fact))
    for approval in approvals:
        names.add("fact", approval.revision.fact_id, fact_named(request, approval.revision.fact))
    for row in [*conversations, *runs]:
        names.add("agent", row.agent.agent_id, agent_named(request, row.agent))
        if row.project is not None:
            names.add("project", row.project.pk, project_named(request, row.project))
    for conversation in conversations:
        names.add("conversation", conversation.pk, conversation_named(request, conversation))
    for run in runs:
        names.add("run", run.pk, run_named(request, run))
    for entry in record.log_entries.rows if record.log_entries else []:
        names.add("log", entry.pk, entry_named(request, entry))
    return names


def _search_page(
    model_admin: ModelAdmin,
    request: HttpRequest,
    tenant: Tenant | None,
    query: str,
    *,
    error: str = "",
) -> HttpResponse:
    hits = (
        search_people(tenant_id=tenant.id, query=query)
        if query and tenant is not None and not error
        else None
    )
    names = Names(request, tenant_id=tenant.id if tenant else None)
    names.want_all("person", [str(hit.subject) for hit in hits or []])
    context = _context(
        model_admin,
        request,
        title="Find a person",
        tenant=tenant,
        query=query,
        hits=hits,
        names=names,
        error=error,
    )
    return TemplateResponse(request, "admin/privacy/person_search.html", context)
