from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import AuditEvent, AuditEventQuerySet
from audit.serializers import AuditPageOutput, AuditQueryInput
from kindmem.permissions import IsTenantAdmin, principal_of


def audit_filter(queryset: AuditEventQuerySet, criteria: dict[str, object]) -> AuditEventQuerySet:
    """The seed's AND-combined criteria plus subject, principal, fact and project."""
    queryset = queryset.filter(seq__gt=criteria.get("since_seq", 0))
    for name, lookup in (
        ("since", "timestamp__gte"),
        ("until", "timestamp__lte"),
        ("phase", "phase"),
        ("outcome", "outcome"),
        ("kind", "kind"),
        ("principal", "principal"),
        ("project_id", "project_id"),
    ):
        if criteria.get(name) is not None:
            queryset = queryset.filter(**{lookup: criteria[name]})
    if criteria.get("subject"):
        queryset = queryset.about_subject(str(criteria["subject"]))
    if criteria.get("fact_id"):
        queryset = queryset.touching(str(criteria["fact_id"]))
    return queryset


class AuditListView(APIView):
    """The tenant's audit events, oldest first after `since_seq` (a cursor that retention
    deletes never shift). Tenant admins only."""

    permission_classes = [IsTenantAdmin]

    @extend_schema(parameters=[AuditQueryInput], responses={200: AuditPageOutput})
    def get(self, request: Request) -> Response:
        query = AuditQueryInput(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        criteria = query.validated_data
        events = list(
            audit_filter(
                AuditEvent.objects.of_tenant(principal_of(request).tenant_id), criteria
            ).order_by("seq")[: criteria["limit"]]
        )
        next_seq = events[-1].seq if events else criteria["since_seq"]
        return Response(AuditPageOutput({"events": events, "next_since_seq": next_seq}).data)
