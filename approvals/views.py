"""The remember endpoint (a run token) and the review endpoints (a reviewer or tenant admin).

Every approval read starts from the caller's tenant, so another tenant's approval is a 404."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.cursors import cursor_encode
from api.serializers import ErrorOutput
from approvals import services
from approvals.models import Approval, ApprovalStatus
from approvals.permissions import IsReviewer
from approvals.remember import memory_remember
from approvals.serializers import (
    ApprovalListInput,
    ApprovalListOutput,
    ApprovalOutput,
    ApproveInput,
    DecisionInput,
    RememberInput,
    RememberOutput,
    remember_body,
)
from audit.recording import AuditedView
from facts.slots import SlotOutcome
from facts.stale import stale_among
from kindmem.permissions import IsRun, principal_of

ERRORS = dict.fromkeys((400, 401, 403, 404, 409), ErrorOutput)
DEFAULT_LIMIT = 50


class RememberView(AuditedView):
    """The agent's `remember` tool: called with a run token; the body carries only what the
    model chooses. 201 for a new revision, 200 for a replay of the same tool call."""

    permission_classes = [IsRun]
    audit_kind = "fact"
    audit_phases = {"POST": "write"}

    @extend_schema(
        request=RememberInput, responses={201: RememberOutput, 200: RememberOutput, **ERRORS}
    )
    def post(self, request: Request) -> Response:
        body = RememberInput(data=request.data)
        body.is_valid(raise_exception=True)
        remembered = memory_remember(principal=principal_of(request), **body.validated_data)
        revision = remembered.result.revision
        services.revision_audit_touch(self.audit, revision)
        written = remembered.result.outcome not in (SlotOutcome.REPLAYED, SlotOutcome.UNCHANGED)
        code = status.HTTP_201_CREATED if written else status.HTTP_200_OK
        return Response(remember_body(remembered), status=code)


class ApprovalListView(AuditedView):
    """The tenant's approvals (pending by default), oldest first, paged by cursor."""

    permission_classes = [IsReviewer]
    audit_kind = "fact"
    audit_phases = {"GET": "read"}

    @extend_schema(parameters=[ApprovalListInput], responses={200: ApprovalListOutput, **ERRORS})
    def get(self, request: Request) -> Response:
        params = ApprovalListInput(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        data = params.validated_data
        principal = principal_of(request)
        qs = (
            Approval.objects.of_tenant(principal.tenant_id)
            .not_held()
            .filter(status=data["status"])
            .select_related("revision__fact")
            .prefetch_related("revision__subjects")
        )
        if "reason" in data:
            qs = qs.filter(reasons__contains=[data["reason"]])
        if "cursor" in data:
            at, ident = data["cursor"]
            qs = qs.filter(Q(created_at__gt=at) | Q(created_at=at, id__gt=ident))
        limit = data.get("limit", DEFAULT_LIMIT)
        page = list(qs.order_by("created_at", "id")[: limit + 1])
        next_cursor = cursor_encode(page[limit - 1]) if len(page) > limit else None
        page = page[:limit]
        # which pending ones a reviewer can no longer approve (`stale-approval`), in one query
        stale = stale_among(
            principal.tenant_id,
            (a.revision_id for a in page if a.status == ApprovalStatus.PENDING),
        )
        for approval in page:
            approval.staleness = stale.get(approval.revision_id)  # type: ignore[attr-defined]
            services.revision_audit_touch(self.audit, approval.revision)
        self.audit.project_id = None
        return Response(ApprovalListOutput({"approvals": page, "next_cursor": next_cursor}).data)


class _DecisionView(AuditedView):
    permission_classes = [IsReviewer]
    audit_kind = "fact"
    audit_phases = {"POST": "write"}
    decision = services.Decision.APPROVE
    input_class: type[DecisionInput] = DecisionInput
    verify = False

    def post(self, request: Request, approval_id: str) -> Response:
        body = self.input_class(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        principal = principal_of(request)
        approval = services.approval_get(principal=principal, approval_id=approval_id)
        decided = services.approval_decide(
            approval=approval,
            decision=self.decision,
            reviewer=principal,
            note=data.get("note", ""),
            verify=self.verify or data.get("verify", False),
            audit=self.audit,
        )
        return Response(ApprovalOutput(decided).data)


class ApprovalApproveView(_DecisionView):
    """Approve: the memory becomes readable as it is; `verify: true` also verifies it."""

    input_class = ApproveInput

    @extend_schema(request=ApproveInput, responses={200: ApprovalOutput, **ERRORS})
    def post(self, request: Request, approval_id: str) -> Response:
        return super().post(request, approval_id)


class ApprovalRejectView(_DecisionView):
    """Reject: the memory is invalidated (`deleted`, by the reviewer) and never readable."""

    decision = services.Decision.REJECT

    @extend_schema(request=DecisionInput, responses={200: ApprovalOutput, **ERRORS})
    def post(self, request: Request, approval_id: str) -> Response:
        return super().post(request, approval_id)


class ApprovalVerifyView(_DecisionView):
    """Approve and verify: a new revision `trust: verified` by the reviewer."""

    verify = True

    @extend_schema(request=DecisionInput, responses={200: ApprovalOutput, **ERRORS})
    def post(self, request: Request, approval_id: str) -> Response:
        return super().post(request, approval_id)
