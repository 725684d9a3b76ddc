"""The webhooks API: a tenant admin registers, lists and deletes the tenant's endpoints."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorOutput
from kindmem.permissions import IsTenantAdmin, principal_of
from webhooks import services
from webhooks.models import Endpoint
from webhooks.serializers import (
    WebhookEndpointCreatedOutput,
    WebhookEndpointCreateInput,
    WebhookEndpointListOutput,
)

ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 404: ErrorOutput}


class EndpointListView(APIView):
    permission_classes = [IsTenantAdmin]

    @extend_schema(responses={200: WebhookEndpointListOutput, **ERRORS}, tags=["webhooks"])
    def get(self, request: Request) -> Response:
        """The tenant's webhook endpoints, oldest first (secrets are never shown again)."""
        endpoints = Endpoint.objects.filter(
            tenant_id=principal_of(request).tenant_id, deleted_at__isnull=True
        ).order_by("created_at", "pk")
        return Response(WebhookEndpointListOutput({"endpoints": list(endpoints)}).data)

    @extend_schema(
        request=WebhookEndpointCreateInput,
        responses={201: WebhookEndpointCreatedOutput, **ERRORS},
        tags=["webhooks"],
    )
    def post(self, request: Request) -> Response:
        """Register an endpoint for some events. The answer carries its signing secret, once.
        A URL whose host is a loopback or private address is refused (`validation-error`)
        unless the operator allows those."""
        principal = principal_of(request)
        data = WebhookEndpointCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = services.endpoint_register(
            tenant_id=principal.tenant_id, created_by=principal.id, **data.validated_data
        )
        return Response(WebhookEndpointCreatedOutput(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    permission_classes = [IsTenantAdmin]

    @extend_schema(
        responses={204: OpenApiResponse(description="Deleted."), **ERRORS}, tags=["webhooks"]
    )
    def delete(self, request: Request, endpoint_id: str) -> Response:
        """Delete an endpoint: no event is sent to it any more, queued ones included."""
        services.endpoint_delete(tenant_id=principal_of(request).tenant_id, endpoint_id=endpoint_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
