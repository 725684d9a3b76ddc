from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import AuditEvent, AuditEventQuerySet
from audit.serializers import AuditPageOutput, AuditQueryInput
from kindmem.permissions import IsTenantAdmin, principal_of


def audit_filter(
    queryset: AuditEventQuerySet, criteria: dict[str, Any], scope: dict[str, Any]
) -> AuditEventQuerySet:
    """The seed's AND-combined criteria (its `kind` and `scope` being a fact's `type` and
    scope keys) plus subject, principal, fact and project. `since_seq` is the caller's."""
    for name, lookup in (
        ("since", "timestamp__gte"),
        ("until", "timestamp__lte"),
        ("phase", "phase"),
        ("outcome", "outcome"),
        ("kind", "kind"),
        ("principal", "principal"),
    ):
        if criteria.get(name) is not None:
            queryset = queryset.filter(**{lookup: criteria[name]})
    if criteria.get("subject"):
        queryset = queryset.about_subject(str(criteria["subject"]))
    if criteria.get("fact_id"):
        queryset = queryset.touching(str(criteria["fact_id"]))
    if criteria.get("type") is not None or set(scope) - {"project_id"}:
        queryset = queryset.targeting(type=criteria.get("type"), scope=scope)
    elif "project_id" in scope:
        queryset = queryset.of_project(scope["project_id"])
    return queryset


class AuditListView(APIView):
    """The tenant's audit events, oldest first. With `since_seq`, the first `limit` after it (a
    cursor that retention deletes never shift); without, the most recent `limit` (the 003
    seed's `limit`). Either way `next_since_seq` pages on from the last one returned. Tenant
    admins only."""

    permission_classes = [IsTenantAdmin]

    @extend_schema(parameters=[AuditQueryInput], responses={200: AuditPageOutput})
    def get(self, request: Request) -> Response:
        query = AuditQueryInput(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        criteria = query.validated_data
        limit = criteria["limit"]
        # the tenant's events only, before any other filter or the LIMIT
        events = audit_filter(
            AuditEvent.objects.of_tenant(principal_of(request).tenant_id), criteria, query.scope()
        )
        if "since_seq" in criteria:
            since_seq = criteria["since_seq"]
            page = list(events.filter(seq__gt=since_seq).order_by("seq")[:limit])
        else:
            since_seq = 0
            page = list(events.order_by("-seq")[:limit])[::-1]
        next_seq = page[-1].seq if page else since_seq
        return Response(AuditPageOutput({"events": page, "next_since_seq": next_seq}).data)
