"""The review console: the queue of memories waiting for a person, cleared from one page.

Each row shows the text (escaped, the words that made it wait marked), why it waits, the agent
and version, the run, the scope and subject, and how long it has waited, with approve,
approve-and-verify and reject (with a note) buttons; the same three are bulk actions. Staff
see their own tenant's approvals only; deciding needs the `decide_approval` permission (the
`reviewer` group has it, and nothing that changes retention or credentials).
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince
from django.views.decorators.http import require_POST

from api.errors import KindmemError, ValidationFailed, error_body
from approvals.evidence import Evidence, evidence_attach, shown_messages, with_replaced
from approvals.highlight import highlight
from approvals.models import Approval, ApprovalQuerySet, ApprovalStatus
from approvals.services import Decision, approval_decide, console_principal
from audit.console import console_read_record
from console.tenant_wall import TenantScopedAdmin, console_scope, person_link
from facts.models import unshown
from facts.review import REASONS

# The console's three decisions: (the service's decision, verify) and what the message says.
CHOICES = {
    "approve": (Decision.APPROVE, False),
    "verify": (Decision.APPROVE, True),
    "reject": (Decision.REJECT, False),
}
DONE = {"approve": "Approved", "verify": "Approved and verified", "reject": "Rejected"}


def tenant_approvals(request: HttpRequest) -> ApprovalQuerySet:
    """The approvals a console user may see: their tenant's; all for platform staff."""
    return console_scope(request, Approval.objects.all())


class NoteActionForm(ActionForm):
    note = forms.CharField(
        required=False,
        max_length=2000,
        label="Note",
        widget=forms.TextInput(attrs={"placeholder": "note (for reject)", "size": 30}),
    )


class ReasonFilter(admin.SimpleListFilter):
    title = "reason"
    parameter_name = "reason"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(r, r) for r in REASONS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Approval]) -> QuerySet[Approval]:
        if self.value() in REASONS:
            return queryset.filter(reasons__contains=[self.value()])
        return queryset


class StatusFilter(admin.SimpleListFilter):
    """Pending by default: the queue is what a reviewer opens the page for."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*ApprovalStatus.choices, ("all", "all")]

    def choices(self, changelist: Any) -> Any:
        for value, label in self.lookup_choices:
            yield {
                "selected": (self.value() or ApprovalStatus.PENDING) == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Approval]) -> QuerySet[Approval]:
        value = self.value() or ApprovalStatus.PENDING
        if value == "all":
            return queryset
        if value in ApprovalStatus.values:
            return queryset.filter(status=value)
        return queryset.none()


@admin.register(Approval)
class ApprovalAdmin(TenantScopedAdmin):
    list_display = [
        "memory",
        "reason_list",
        "waiting",
        "agent_and_version",
        "run_link",
        "scope_and_subject",
        "status",
        "decide",
    ]
    list_filter = [
        StatusFilter,
        ReasonFilter,
        "agent",  # choices from the user's tenant (console.tenant_wall.TenantRelatedFilter)
        "project",
    ]
    search_fields = ["=id", "=revision__fact__id", "=revision__subjects__subject_id"]
    list_select_related = [
        "revision__fact__project",
        "revision__fact__user",
        "agent",
        "project",
        "run",
    ]
    list_display_links = ["waiting"]
    ordering = ["created_at", "id"]
    list_per_page = 50
    actions = ["approve_selected", "verify_selected", "reject_selected"]
    action_form = NoteActionForm
    readonly_fields = [
        "memory",
        "reason_list",
        "status",
        "agent_and_version",
        "run_link",
        "scope_and_subject",
        "fact_link",
        "created_at",
        "decided_at",
        "decided_by",
        "note",
    ]
    fields = readonly_fields

    # --- who sees and does what --------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Approval]:
        return with_replaced(
            super()
            .get_queryset(request)
            .select_related(
                "revision__fact__project", "revision__fact__user", "agent", "project", "run"
            )
            .prefetch_related("revision__subjects")
            .defer(*unshown("revision__"))
        )

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """The page's rows, each with what it would replace and the messages it cites
        (`approvals.evidence`: two queries for the page); showing messages is a read of the
        people they are about, audited per tenant."""
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)
        evidence_attach(rows)
        for tenant_id in sorted({r.tenant_id for r in rows}, key=str):
            refs, subjects = shown_messages(r for r in rows if r.tenant_id == tenant_id)
            if refs:
                console_read_record(
                    user=request.user,
                    tenant_id=tenant_id,
                    kind="message",
                    object_ids=refs,
                    subjects=sorted(subjects),
                    endpoint="GET console approvals",
                )
        return changelist

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("approvals.decide_approval")

    # --- columns ---------------------------------------------------------------------

    @admin.display(description="memory")
    def memory(self, obj: Approval) -> str:
        return format_html(
            '<div class="review-text" data-approval="{}">{}</div><small>{} · {}</small>{}',
            obj.id,
            highlight(obj.text, obj.findings),
            obj.revision.fact.type,
            format_html(
                '<a href="{}">fact v{}</a>',
                reverse("admin:facts_fact_change", args=[obj.revision.fact_id]),
                obj.revision.version,
            ),
            self._evidence(getattr(obj, "evidence", None)),
        )

    @staticmethod
    def _evidence(evidence: Evidence | None) -> str:
        """A proposed supersede's change (what readers read now, struck; what it would say,
        underlined) and the messages the memory rests on, each escaped."""
        if evidence is None:
            return ""
        parts = []
        if evidence.stale is not None:
            # Why approving is refused, and what the fact reads now (the value an approval
            # would overwrite), so the reviewer decides against the newer value, not the old.
            now = evidence.stale.current_version
            parts.append(
                format_html(
                    '<div class="review-stale" role="note"><strong>Stale</strong>: {}</div>',
                    evidence.stale.message,
                )
            )
            if evidence.current_text is not None:
                parts.append(
                    format_html(
                        '<div class="review-now"><small>the fact now (v{})</small> {}</div>',
                        now,
                        evidence.current_text,
                    )
                )
        if evidence.diff is not None and evidence.diff.compared:
            parts.append(
                format_html(
                    '<div class="review-diff" title="what it would replace: -{} +{} words">'
                    "<small>replaces</small> {}</div>",
                    evidence.diff.removed,
                    evidence.diff.added,
                    evidence.diff.html,
                )
            )
        if evidence.cited or evidence.missing:
            cited = format_html_join(
                "",
                '<li><span class="review-ref">{}</span> <em>{}</em>: {}</li>',
                ((c.ref, c.role, c.text) for c in evidence.cited),
            )
            missing = format_html_join(
                "",
                '<li><span class="review-ref">{}</span> <em>no longer there</em></li>',
                ((ref,) for ref in evidence.missing),
            )
            parts.append(
                format_html(
                    '<div class="review-evidence"><small>from the conversation</small>'
                    "<ul>{}{}</ul></div>",
                    cited,
                    missing,
                )
            )
        return format_html_join("", "{}", ((p,) for p in parts))

    @admin.display(description="reasons")
    def reason_list(self, obj: Approval) -> str:
        return format_html_join(
            " ", '<span class="review-reason">{}</span>', ((r,) for r in obj.reasons)
        )

    @admin.display(description="waiting", ordering="created_at")
    def waiting(self, obj: Approval) -> str:
        end = obj.decided_at or timezone.now()
        return timesince(obj.created_at, end)

    @admin.display(description="agent")
    def agent_and_version(self, obj: Approval) -> str:
        version = obj.agent_version or obj.revision.attributed_agent_version
        return f"{obj.revision.attributed_id}@{version}"

    @admin.display(description="run")
    def run_link(self, obj: Approval) -> str:
        # Plain text: the run pages are not the reviewer's (the role sees no credentials).
        revision = obj.revision
        return format_html(
            '<span title="{}">{}</span><br><small>step {} · tool call {}</small>',
            obj.run_id or "-",
            str(obj.run_id or "-")[:8],
            revision.generated_by_step_id or "-",
            revision.generated_by_tool_call_id or "-",
        )

    @admin.display(description="scope · subject")
    def scope_and_subject(self, obj: Approval) -> str:
        fact = obj.revision.fact
        tenant = obj.tenant_id
        where = []  # (label, value) pairs; a person's value is a link to their page
        if fact.participant_id:
            where.append(("participant", person_link("participant", fact.participant_id, tenant)))
        if fact.thread_id:
            where.append(("thread", fact.thread_id))
        if fact.user:
            where.append(("user", person_link("user", fact.user_id, tenant, fact.user.username)))
        if fact.project:
            where.append(("project", fact.project.name))
        subjects = format_html_join(
            ", ",
            "{}",
            (
                (person_link(s.kind, s.subject_id, tenant, f"{s.kind}:{s.subject_id}"),)
                for s in obj.revision.subjects.all()
            ),
        )
        return format_html(
            '<span title="{}">{}</span><br><small>about {}</small>',
            ", ".join(f"{k}={v}" for k, v in fact.scope.items()),
            format_html_join(" · ", "{} {}", where) if where else "tenant-wide",
            subjects or "no one",
        )

    @admin.display(description="fact")
    def fact_link(self, obj: Approval) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:facts_fact_change", args=[obj.revision.fact_id]),
            obj.revision.fact_id,
        )

    @admin.display(description="decide")
    def decide(self, obj: Approval) -> str:
        if obj.status != ApprovalStatus.PENDING:
            return format_html(
                "{} by {}<br><small>{}</small>", obj.status, obj.decided_by, obj.note
            )
        # Buttons of the changelist's own form (which carries the CSRF token), sent to this
        # row's decide URL. A stale memory's approve buttons are disabled, saying why; the
        # service refuses it anyway (a key, a bulk action, a page loaded before the change).
        url = reverse("admin:approvals_approval_decide", args=[obj.id])
        evidence: Evidence | None = getattr(obj, "evidence", None)
        stale = evidence.stale if evidence is not None else None
        refused = (
            format_html(' disabled title="Approve refused: {}"', stale.message) if stale else ""
        )
        return format_html(
            '<div class="review-decide">'
            '<button type="submit" class="button" formaction="{}" name="decision" '
            'value="approve" data-action="approve"{}>Approve</button> '
            '<button type="submit" class="button" formaction="{}" name="decision" '
            'value="verify" data-action="verify"{}>Approve &amp; verify</button><br>'
            '<input type="text" name="note-{}" placeholder="note" maxlength="2000" size="18" '
            'aria-label="note for a rejection"> '
            '<button type="submit" class="button" formaction="{}" name="decision" '
            'value="reject" data-action="reject">Reject</button>'
            '<small class="review-note-prompt" hidden>Type the note, then Enter rejects; '
            "Esc cancels.</small></div>",
            url,
            refused,
            url,
            refused,
            obj.id,
            url,
        )

    # --- deciding --------------------------------------------------------------------

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # The keys (approvals/static/approvals/review_keys.js) are for those who may decide.
        context = {
            "title": "The review queue",
            "can_decide": self.has_decide_permission(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<uuid:approval_id>/decide/",
                self.admin_site.admin_view(require_POST(self.decide_view)),
                name="approvals_approval_decide",
            ),
            *super().get_urls(),
        ]

    def _decide(
        self, request: HttpRequest, approval: Approval, choice: str, note: str, endpoint: str
    ) -> Approval | KindmemError:
        """One console decision (a row's button, a key, a bulk action): the service the API
        calls too, which also records its audit event. Returns the decided approval, or the
        refusal."""
        decision, verify = CHOICES[choice]
        try:
            return approval_decide(
                approval=approval,
                decision=decision,
                verify=verify,
                reviewer=console_principal(request.user, approval.tenant_id),
                note=note,
                endpoint=endpoint,
            )
        except KindmemError as exc:
            return exc

    def decide_view(self, request: HttpRequest, approval_id: uuid.UUID) -> HttpResponse:
        """A row's decision. A form post (the row's buttons) is redirected back to the queue
        with a message; a `fetch` that asks for JSON (the queue's keys, approvals/static/
        approvals/review_keys.js) gets the outcome and the new pending count, no reload."""
        answer_json = request.accepts("application/json") and not request.accepts("text/html")
        if not self.has_decide_permission(request):
            raise Http404
        approval = self.get_queryset(request).filter(pk=approval_id).first()
        if approval is None:
            raise Http404
        choice = request.POST.get("decision", "")
        if choice not in CHOICES:
            outcome: Approval | KindmemError = ValidationFailed("Choose approve, verify or reject.")
        else:
            note = request.POST.get(f"note-{approval.id}", "")[:2000]
            outcome = self._decide(request, approval, choice, note, "POST console approval-decide")
        if answer_json:
            if isinstance(outcome, KindmemError):
                body = error_body(outcome.code, outcome.message, outcome.details)
                return JsonResponse(body, status=outcome.status_code)
            return JsonResponse(
                {
                    "id": str(outcome.id),
                    "status": outcome.status,
                    "message": f"{DONE[choice]}: {outcome.text[:80]}",
                    "pending": tenant_approvals(request).pending().count(),
                }
            )
        if isinstance(outcome, KindmemError):
            self.message_user(request, f"{approval.id}: {outcome.message}", messages.ERROR)
        else:
            self.message_user(request, f"{DONE[choice]}: {outcome.text[:80]}", messages.SUCCESS)
        back = reverse("admin:approvals_approval_changelist")
        referer = request.META.get("HTTP_REFERER", "")
        if referer and request.get_host() in referer and back in referer:
            back = referer
        return HttpResponseRedirect(back)

    def _bulk(self, request: HttpRequest, queryset: QuerySet[Approval], decision: str) -> None:
        note = request.POST.get("note", "")[:2000]
        pending = queryset.filter(status=ApprovalStatus.PENDING).order_by("pk")
        done = refused = 0
        for approval in pending:
            outcome = self._decide(request, approval, decision, note, "POST console approvals")
            if isinstance(outcome, KindmemError):
                # each refusal says why (a stale memory: the fact moved on since)
                self.message_user(request, f"{approval.id}: {outcome.message}", messages.ERROR)
                refused += 1
            else:
                done += 1
        skipped = queryset.count() - done - refused
        level = messages.SUCCESS if done else messages.WARNING
        self.message_user(
            request,
            f"{decision}: {done} decided, {refused} refused, {skipped} skipped (not pending).",
            level,
        )

    @admin.action(description="Approve the selected memories", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._bulk(request, queryset, "approve")

    @admin.action(description="Approve and verify the selected memories", permissions=["decide"])
    def verify_selected(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._bulk(request, queryset, "verify")

    @admin.action(
        description="Reject the selected memories (with the note)", permissions=["decide"]
    )
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._bulk(request, queryset, "reject")
