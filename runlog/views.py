"""The run log's routes: append, page through, verify."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorOutput
from kindmem.access import readers_for
from kindmem.permissions import principal_of
from runlog import services
from runlog.models import LogEntry
from runlog.serializers import (
    LogAppendInput,
    LogEntryOutput,
    LogListInput,
    LogPageOutput,
    LogVerifyOutput,
)
from runlog.verify import verify_run

ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 404: ErrorOutput}


class RunLogView(APIView):
    """A run's log: append an entry (POST) or read a page of entries (GET)."""

    @extend_schema(
        request=LogAppendInput, responses={201: LogEntryOutput, 409: ErrorOutput, **ERRORS}
    )
    def post(self, request: Request, run_id: uuid.UUID) -> Response:
        principal = principal_of(request)
        run = services.run_for_appending(principal=principal, run_id=run_id)
        data = LogAppendInput(data=request.data)
        data.is_valid(raise_exception=True)
        entry = services.log_append(principal=principal, run=run, **data.validated_data)
        return Response(LogEntryOutput(entry).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[LogListInput], responses={200: LogPageOutput, **ERRORS})
    def get(self, request: Request, run_id: uuid.UUID) -> Response:
        principal = principal_of(request)
        params = LogListInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        readers = readers_for(principal)
        run = services.run_for_reading(principal=principal, run_id=run_id, readers=readers)
        limit = params.validated_data["limit"]
        # The guard is in this query too (not only in fetching the run above), so the page can
        # never hold an entry of a run these readers do not cover.
        entries = list(
            LogEntry.objects.of_run(run)
            .readable_by(principal.tenant_id, readers)
            .after(params.validated_data["after_sequence"])[: limit + 1]
        )
        more = len(entries) > limit
        entries = entries[:limit]
        body = {
            "entries": entries,
            "next_after_sequence": entries[-1].sequence if more else None,
        }
        return Response(LogPageOutput(body).data)


class RunLogVerifyView(APIView):
    """Recompute a run's hash chain from genesis."""

    @extend_schema(responses={200: LogVerifyOutput, **ERRORS})
    def get(self, request: Request, run_id: uuid.UUID) -> Response:
        run = services.run_for_reading(principal=principal_of(request), run_id=run_id)
        return Response(LogVerifyOutput(verify_run(run).as_dict()).data)
