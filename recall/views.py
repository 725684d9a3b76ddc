"""The recall routes: a conversation's messages (read, append, delete); recall earlier
conversations."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import NotFound
from api.serializers import ErrorOutput
from audit.recording import AuditedView
from kindmem.access import readers_for
from kindmem.permissions import principal_of
from kindmem.serializers import readers_snapshot
from recall import services
from recall.models import Conversation, Message
from recall.models import message_ref as message_ref_of
from recall.querysets import Selection
from recall.search import RecallQuery, recall_search
from recall.serializers import (
    MAX_TOP_K,
    AppendInput,
    AppendOutput,
    MessageDeleteOutput,
    MessageListInput,
    MessageListOutput,
    MessagesClearOutput,
    RecallInput,
    RecallOutput,
)
from retrieval import cross_encoder

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
    """A conversation's messages: read them in order, append one or a batch (the conversation
    is created on its first write), or delete them all.

    Three methods on one route, against the house habit of two: they are the one collection's
    read, append and clear, and a client (an agent framework's session) finds all three where
    it expects them; deleting one message is the route below it."""

    audit_kind = "message"
    audit_phases = {"GET": "read", "POST": "write", "DELETE": "delete"}

    @extend_schema(
        parameters=[MessageListInput],
        responses={200: MessageListOutput, **ERRORS},
        operation_id="conversation_messages_list",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        """The newest `limit` messages (before `before_sequence`), oldest first, tool messages
        and each message's `data` included: the conversation as it was written, for the
        credentials that may recall it (`isRecallReadableBy`); nothing while an erasure holds
        it (404, like a conversation that does not exist)."""
        params = MessageListInput(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        validated = params.validated_data
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
        messages = Message.objects.of_tenant(principal.tenant_id).filter(conversation=conversation)
        if "before_sequence" in validated:
            messages = messages.filter(sequence__lt=validated["before_sequence"])
        limit = validated["limit"]
        newest = list(messages.defer("embedding", "search").order_by("-sequence")[: limit + 1])
        page = list(reversed(newest[:limit]))
        next_before = page[0].sequence if len(newest) > limit else None
        self.audit.touch(
            ids=[message_ref(conversation, m.sequence) for m in page],
            subjects=conversation_subjects(conversation),
        )
        self.audit.project_id = conversation.project_id
        self.audit.query_snapshot = {"conversation_id": conversation_id, **validated}
        body = {"conversation": conversation, "messages": page, "next_before_sequence": next_before}
        return Response(MessageListOutput(body).data)

    @extend_schema(request=AppendInput, responses={201: AppendOutput, **ERRORS})
    def post(self, request: Request, conversation_id: str) -> Response:
        data = AppendInput(data=request.data)
        data.is_valid(raise_exception=True)
        validated = data.validated_data
        segments = validated.get("segments")
        conversation, rows = services.conversation_append(
            principal=principal_of(request),
            conversation_id=conversation_id,
            messages=[
                services.NewMessage(m["role"], m["text"], m.get("data"))
                for m in validated["messages"]
            ],
            start=services.ConversationStart(
                agent_id=validated.get("agent_id"),
                project_id=validated.get("project_id"),
                participant_id=validated.get("participant_id"),
                user_id=validated.get("user_id"),
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

    @extend_schema(
        responses={200: MessagesClearOutput, **ERRORS}, operation_id="conversation_messages_clear"
    )
    def delete(self, request: Request, conversation_id: str) -> Response:
        """Delete every message of the conversation (a run its own, an app its projects');
        the conversation stays, and its sequences go on from where they were."""
        conversation, rows = services.messages_delete(
            principal=principal_of(request), conversation_id=conversation_id
        )
        return _deleted(self, conversation, rows, MessagesClearOutput, {"deleted": len(rows)})


class ConversationMessageView(AuditedView):
    """Delete one message of a conversation, by its sequence (say the last, taken back)."""

    audit_kind = "message"
    audit_phases = {"DELETE": "delete"}

    @extend_schema(
        responses={200: MessageDeleteOutput, **ERRORS}, operation_id="conversation_message_delete"
    )
    def delete(self, request: Request, conversation_id: str, sequence: int) -> Response:
        conversation, rows = services.messages_delete(
            principal=principal_of(request), conversation_id=conversation_id, sequence=sequence
        )
        return _deleted(self, conversation, rows, MessageDeleteOutput, {"message": rows[0]})


def _deleted(
    view: AuditedView,
    conversation: Conversation,
    rows: list[Message],
    output: type[MessageDeleteOutput] | type[MessagesClearOutput],
    body: dict[str, object],
) -> Response:
    view.audit.touch(
        ids=[message_ref(conversation, m.sequence) for m in rows],
        subjects=conversation_subjects(conversation),
    )
    view.audit.project_id = conversation.project_id
    view.audit.query_snapshot = {"conversation_id": conversation.thread_id, "count": len(rows)}
    return Response(output({"conversation": conversation, **body}).data)


class RecallView(AuditedView):
    """Recall messages of earlier conversations the credential may read (`isRecallReadableBy`)."""

    reads_only = True  # a POST for its body, not a write: the write throttle leaves it alone
    audit_kind = "message"
    audit_phases = {"POST": "retrieve"}
    replica_methods = frozenset({"POST"})

    @extend_schema(request=RecallInput, responses={200: RecallOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        data = RecallInput(data=request.data)
        data.is_valid(raise_exception=True)
        validated = data.validated_data
        principal = principal_of(request)
        # the operator's cross-encoder reorders a deeper pool of a query's hits
        top_k = validated["top_k"]
        if validated["mode"] != "list":
            top_k = cross_encoder.pool(top_k, MAX_TOP_K)
        hits = recall_search(
            request=RecallQuery(
                tenant_id=principal.tenant_id,
                readers=readers_for(principal),
                selections=[
                    Selection(**{**s, "segments_prefix": tuple(s.get("segments_prefix", ()))})
                    for s in validated["selections"]
                ],
                mode=validated["mode"],
                top_k=top_k,
                roles=tuple(validated.get("roles", ["user"])),
                query=validated.get("query"),
                rerank=settings.RERANK,
                narrowed_to=validated.get("readers"),
                abstain=validated["abstain"],
                min_relevance=validated.get("min_relevance"),
            )
        )
        reranker = None
        if validated["mode"] != "list":
            hits, reranker = cross_encoder.reranked(
                validated["query"], hits, lambda h: h.message.text, validated["top_k"]
            )
        for hit in hits:
            self.audit.touch(
                ids=[message_ref(hit.message.conversation, hit.message.sequence)],
                subjects=conversation_subjects(hit.message.conversation),
            )
        self.audit.query_snapshot = {
            "mode": validated["mode"],
            "top_k": validated["top_k"],
            "roles": list(validated.get("roles", ["user"])),
            "selections": len(validated["selections"]),
            "query": validated.get("query"),
            "abstain": validated["abstain"],
            "min_relevance": validated.get("min_relevance"),
        }
        if "readers" in validated:
            self.audit.query_snapshot["readers"] = readers_snapshot(validated["readers"])
        body = RecallOutput({"hits": hits}).data
        if reranker:
            body["reranker"] = reranker
        return Response(body)
