"""The extraction route: ask for a conversation's extraction, and read how its extractions
went. Both start from the recall guard: a conversation the credential may not recall is a
404, like one that does not exist."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import NotFound
from api.serializers import ErrorOutput
from audit.recording import AuditedView
from extraction.models import ConversationExtraction, ExtractionDecision, ExtractionJob
from extraction.permissions import IsRunOrApp
from extraction.serializers import ExtractInput, ExtractionStateOutput, ExtractOutput
from extraction.services import extraction_request
from kindmem.access import readers_for
from kindmem.permissions import principal_of
from recall.models import Conversation

ERRORS = dict.fromkeys((400, 401, 403, 404, 409, 429, 503), ErrorOutput)
# the newest extractions GET answers
RECENT_JOBS = 10


def _subjects(conversation: Conversation) -> list[tuple[str, str]]:
    if conversation.participant_id:
        return [("participant", conversation.participant_id)]
    if conversation.user_id:
        return [("user", str(conversation.user_id))]
    return []


def _jobs() -> Prefetch:
    return Prefetch("decisions", queryset=ExtractionDecision.objects.order_by("index"))


class ConversationExtractView(AuditedView):
    """`POST`: extract memories from the conversation's messages since its watermark (202, a
    job a worker runs; 200 `up-to-date` when nothing is new). `GET`: the watermark and the
    newest extractions, each with its decisions."""

    permission_classes = [IsRunOrApp]
    audit_kind = "message"
    audit_phases = {"POST": "write", "GET": "read"}

    @extend_schema(
        request=ExtractInput,
        responses={202: ExtractOutput, 200: ExtractOutput, **ERRORS},
        operation_id="conversation_extract",
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        ExtractInput(data=request.data).is_valid(raise_exception=True)
        opened = extraction_request(
            principal=principal_of(request), conversation_id=conversation_id
        )
        job = opened.job
        if job is not None:
            job = ExtractionJob.objects.prefetch_related(_jobs()).get(pk=job.pk)
            self.audit.touch(ids=[job.id], subjects=_subjects(job.conversation))
            self.audit.project_id = job.conversation.project_id
        outcome = "up-to-date" if job is None else "queued" if opened.created else "already-queued"
        self.audit.query_snapshot = {"conversation_id": conversation_id, "outcome": outcome}
        body = {
            "outcome": outcome,
            "conversation_id": conversation_id,
            "extracted_through": opened.extracted_through,
            "last_sequence": opened.last_sequence,
            "job": job,
        }
        code = status.HTTP_200_OK if job is None else status.HTTP_202_ACCEPTED
        return Response(ExtractOutput(body).data, status=code)

    @extend_schema(
        responses={200: ExtractionStateOutput, **ERRORS}, operation_id="conversation_extractions"
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        principal = principal_of(request)
        conversation = (
            Conversation.objects.of_tenant(principal.tenant_id)
            .recall_readable_by(readers_for(principal))
            .not_held()
            .filter(thread_id=conversation_id)
            .first()
        )
        if conversation is None:
            raise NotFound("No such conversation.")
        mark = ConversationExtraction.objects.filter(conversation=conversation).first()
        jobs = list(
            ExtractionJob.objects.of_tenant(principal.tenant_id)
            .filter(conversation=conversation)
            .prefetch_related(_jobs())
            .order_by("-created_at", "-id")[:RECENT_JOBS]
        )
        self.audit.touch(ids=[j.id for j in jobs], subjects=_subjects(conversation))
        self.audit.project_id = conversation.project_id
        self.audit.query_snapshot = {"conversation_id": conversation_id}
        body = {
            "conversation_id": conversation_id,
            "extracted_through": mark.extracted_through if mark else 0,
            "last_sequence": conversation.last_sequence,
            "jobs": jobs,
        }
        return Response(ExtractionStateOutput(body).data)
