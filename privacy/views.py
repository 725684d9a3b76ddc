"""The privacy API: erasures and subject access requests. One view per route: parse, call a
service or a QuerySet (always within the caller's tenant: another tenant's request is a 404),
render."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import NotFound
from api.serializers import ErrorOutput
from kindmem.permissions import principal_of
from kindmem.subjects import Subject
from privacy import services
from privacy.erasure import erasure_preview
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.permissions import IsPrivacyOfficer
from privacy.serializers import (
    AccessRequestCreateInput,
    AccessRequestOutput,
    DownloadInput,
    ErasureCreateInput,
    ErasureOutput,
    ErasurePreviewInput,
    ErasurePreviewOutput,
    ErasureQueryInput,
)

ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 404: ErrorOutput}


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFound("No such request.") from None


class ErasureListView(APIView):
    permission_classes = [IsPrivacyOfficer]

    # One body for both modes, so the schema documents the dry run's (`reason` optional); a
    # real erasure without a reason is a 400 `validation-error`.
    @extend_schema(
        request=ErasurePreviewInput,
        parameters=[ErasureQueryInput],
        responses={
            202: ErasureOutput,
            200: OpenApiResponse(
                ErasurePreviewOutput, description="`dry_run=true`: the preview; nothing started."
            ),
            **ERRORS,
        },
        tags=["privacy"],
    )
    def post(self, request: Request) -> Response:
        """Erase everything about a person or a conversation. Reads of their data return
        nothing and writes for them answer `erasure-in-progress` from this response on.

        With `?dry_run=true`, nothing is started or written: the answer (200) is what the
        erasure would erase now, per kind, what legal hold would keep, and whether the id
        matches anything at all (`nothing_matches`), the same preview as the console's."""
        principal = principal_of(request)
        query = ErasureQueryInput(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        if query.validated_data["dry_run"]:
            return self._preview(request, principal)
        data = ErasureCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        erasure = services.erasure_start(
            tenant_id=principal.tenant_id,
            target_kind=data.validated_data["target_kind"],
            target_id=data.validated_data["target_id"],
            reason=data.validated_data["reason"],
            requested_by=principal.id,
        )
        return Response(ErasureOutput(erasure).data, status=status.HTTP_202_ACCEPTED)

    def _preview(self, request: Request, principal: Any) -> Response:
        data = ErasurePreviewInput(data=request.data)
        data.is_valid(raise_exception=True)
        subject = Subject.parse(
            data.validated_data["target_kind"], data.validated_data["target_id"]
        )
        preview = erasure_preview(tenant_id=principal.tenant_id, subject=subject)
        return Response(ErasurePreviewOutput(preview).data)


class ErasureDetailView(APIView):
    permission_classes = [IsPrivacyOfficer]

    @extend_schema(responses={200: ErasureOutput, **ERRORS}, tags=["privacy"])
    def get(self, request: Request, erasure_id: str) -> Response:
        """An erasure's status, progress (records done / total) and, once done, receipt."""
        principal = principal_of(request)
        erasure = ErasureRequest.objects.filter(
            tenant_id=principal.tenant_id, pk=_uuid(erasure_id)
        ).first()
        if erasure is None:
            raise NotFound("No such erasure.")
        return Response(ErasureOutput(erasure).data)


def access_request_render(request: Request, access: AccessRequest) -> dict[str, Any]:
    download = None
    if access.status == RequestStatus.COMPLETED:
        from django.conf import settings

        token = services.access_export_token(request=access)
        url = request.build_absolute_uri(
            reverse("subject-access-request-download", kwargs={"request_id": access.id})
        )
        download = {
            "json": f"{url}?export=json&token={token}",
            "zip": f"{url}?export=zip&token={token}",
            "expires_in_seconds": settings.ACCESS_EXPORT_LINK_MAX_AGE,
        }
    return AccessRequestOutput({**access.__dict__, "download": download}).data


class AccessRequestListView(APIView):
    permission_classes = [IsPrivacyOfficer]

    @extend_schema(
        request=AccessRequestCreateInput,
        responses={202: AccessRequestOutput, **ERRORS},
        tags=["privacy"],
    )
    def post(self, request: Request) -> Response:
        """Ask for an export of everything kindmem holds about a person (built by a worker)."""
        principal = principal_of(request)
        data = AccessRequestCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        access = services.access_request_start(
            actor=services.Actor.of_principal(principal),
            subject_kind=data.validated_data["subject_kind"],
            subject_id=data.validated_data["subject_id"],
        )
        return Response(access_request_render(request, access), status=status.HTTP_202_ACCEPTED)


class AccessRequestDetailView(APIView):
    permission_classes = [IsPrivacyOfficer]

    @extend_schema(responses={200: AccessRequestOutput, **ERRORS}, tags=["privacy"])
    def get(self, request: Request, request_id: str) -> Response:
        """A subject access request's status and, once built, its signed download links."""
        principal = principal_of(request)
        access = AccessRequest.objects.filter(
            tenant_id=principal.tenant_id, pk=_uuid(request_id)
        ).first()
        if access is None:
            raise NotFound("No such request.")
        return Response(access_request_render(request, access))


class AccessRequestDownloadView(APIView):
    permission_classes = [IsPrivacyOfficer]

    @extend_schema(
        parameters=[DownloadInput],
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="The JSON export."
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The Markdown memory files, zipped."
            ),
            **ERRORS,
            410: ErrorOutput,
        },
        tags=["privacy"],
    )
    def get(self, request: Request, request_id: str) -> HttpResponse:
        """Download an export through a signed link that expires (audited, phase read)."""
        principal = principal_of(request)
        data = DownloadInput(data=request.query_params.dict())
        data.is_valid(raise_exception=True)
        export = services.access_export_open(
            actor=services.Actor.of_principal(principal),
            request_id=_uuid(request_id),
            token=data.validated_data["token"],
            fmt=data.validated_data["export"],
            endpoint="GET subject-access-request-download",
        )
        response = HttpResponse(export.content, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.name}"'
        return response
