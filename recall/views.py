"""The recall routes: append messages to a conversation; recall earlier conversations."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from audit.recording import AuditedView
from kindmem.access import readers_for
from kindmem.permissions import principal_of
from kindmem.serializers import ErrorOutput
from recall import services
from recall.models import Conversation
from recall.models import message_ref as message_ref_of
from recall.search import RecallQuery, Selection, recall_search
from recall.serializers import AppendInput, AppendOutput, RecallInput, RecallOutput

ERRORS = {
    400: ErrorOutput,
    401: ErrorOutput,
    403: ErrorOutput,
    404: ErrorOutput,
    409: ErrorOutput,
    503: ErrorOutput,
}


def conversation_subjects(conversation: Conversation) -> list[tuple[str, str]]:
    """Whom a conversation's messages are about: its end user, else its Kindgi user."""
    if conversation.participant_id:
        return [("participant", conversation.participant_id)]
    if conversation.user_id:
        return [("user", str(conversation.user_id))]
    return []


def message_ref(conversation: Conversation, sequence: int) -> str:
    """How the audit stream names a message (`recall.models.message_ref`)."""
    return message_ref_of(conversation.thread_id, sequence)


class ConversationMessagesView(AuditedView):
    """Append one message or a batch to a conversation (created on its first write)."""

    audit_kind = "message"
    audit_phases = {"POST": "write"}

    @extend_schema(request=AppendInput, responses={201: AppendOutput, **ERRORS})
    def post(self, request: Request, conversation_id: str) -> Response:
        data = AppendInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        segments = v.get("segments")
        conversation, rows = services.conversation_append(
            principal=principal_of(request),
            conversation_id=conversation_id,
            messages=[services.NewMessage(m["role"], m["text"]) for m in v["messages"]],
            start=services.ConversationStart(
                agent_id=v.get("agent_id"),
                project_id=v.get("project_id"),
                participant_id=v.get("participant_id"),
                user_id=v.get("user_id"),
                segments=tuple(segments) if segments is not None else None,
            ),
        )
        self.audit.touch(
            ids=[message_ref(conversation, m.sequence) for m in rows],
            subjects=conversation_subjects(conversation),
        )
        self.audit.project_id = conversation.project_id
        self.audit.query_snapshot = {"conversation_id": conversation_id, "count": len(rows)}
        body = AppendOutput({"conversation": conversation, "messages": rows}).data
        return Response(body, status=status.HTTP_201_CREATED)


class RecallView(AuditedView):
    """Recall messages of earlier conversations the credential may read (`isRecallReadableBy`)."""

    reads_only = True  # a POST for its body, not a write: the write throttle leaves it alone
    audit_kind = "message"
    audit_phases = {"POST": "retrieve"}

    @extend_schema(request=RecallInput, responses={200: RecallOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        data = RecallInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        principal = principal_of(request)
        hits = recall_search(
            request=RecallQuery(
                tenant_id=principal.tenant_id,
                readers=readers_for(principal),
                selections=[
                    Selection(**{**s, "segments_prefix": tuple(s.get("segments_prefix", ()))})
                    for s in v["selections"]
                ],
                mode=v["mode"],
                top_k=v["top_k"],
                roles=tuple(v.get("roles", ["user"])),
                query=v.get("query"),
                rerank=settings.RERANK,
            )
        )
        for hit in hits:
            self.audit.touch(
                ids=[message_ref(hit.message.conversation, hit.message.sequence)],
                subjects=conversation_subjects(hit.message.conversation),
            )
        self.audit.query_snapshot = {
            "mode": v["mode"],
            "top_k": v["top_k"],
            "roles": list(v.get("roles", ["user"])),
            "selections": len(v["selections"]),
            "query": v.get("query"),
        }
        return Response(RecallOutput({"hits": hits}).data)
