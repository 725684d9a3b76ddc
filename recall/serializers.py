from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from api import fields
from kindmem.serializers import ReadersInput
from recall.models import RECALLABLE_ROLES, Role
from recall.search import MODES
from recall.services import MAX_BATCH, MAX_TEXT_CHARS

MAX_TOP_K = 100
MAX_SELECTIONS = 20
MAX_QUERY_CHARS = 2_000
# A message's `data`: room for a tool call's output; a batch still fits KINDMEM_MAX_BODY_BYTES
# only when it is small, so a client sends large items in requests of their own.
MAX_DATA_BYTES = 256 * 1024
MAX_LIST_LIMIT = 200
DEFAULT_LIST_LIMIT = 50

ID_FIELD: dict[str, Any] = {"max_length": 200, "allow_blank": False, "trim_whitespace": False}


def _data_size(value: Any) -> Any:
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_DATA_BYTES:
        raise serializers.ValidationError(
            f"data is {size} bytes of JSON; at most {MAX_DATA_BYTES} are accepted."
        )
    return value


class MessageInput(fields.StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)
    text = serializers.CharField(max_length=MAX_TEXT_CHARS, trim_whitespace=False)
    data = serializers.JSONField(
        required=False,
        allow_null=True,
        validators=[_data_size],
        help_text="Kept with the message and returned as given, never indexed or recalled: an"
        " agent framework's own record of the turn (e.g. an OpenAI Agents SDK item).",
    )


class AppendInput(fields.StrictSerializer):
    """One message (`role`, `text`) or a batch (`messages`); creation fields for an app."""

    role = serializers.ChoiceField(choices=Role.choices, required=False)
    text = serializers.CharField(max_length=MAX_TEXT_CHARS, trim_whitespace=False, required=False)
    messages = MessageInput(many=True, required=False, max_length=MAX_BATCH, min_length=1)
    agent_id = serializers.SlugField(max_length=100, required=False)
    project_id = fields.UUIDField(required=False)
    participant_id = serializers.CharField(required=False, **ID_FIELD)
    user_id = fields.UUIDField(required=False)
    segments = serializers.ListField(
        child=serializers.CharField(max_length=200, trim_whitespace=False),
        max_length=10,
        required=False,
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        single = "role" in attrs or "text" in attrs
        if single and "messages" in attrs:
            raise serializers.ValidationError("Send either role and text, or messages, not both.")
        if "messages" in attrs:
            return attrs
        if not ("role" in attrs and "text" in attrs):
            raise serializers.ValidationError("Send role and text, or messages: [{role, text}].")
        attrs["messages"] = [{"role": attrs.pop("role"), "text": attrs.pop("text")}]
        return attrs


class AppendedMessageOutput(serializers.Serializer):
    sequence = serializers.IntegerField()
    role = serializers.CharField()
    created_at = serializers.DateTimeField()
    embedded = serializers.SerializerMethodField()

    def get_embedded(self, message: Any) -> bool:
        return message.embedding is not None


class AppendOutput(serializers.Serializer):
    conversation_id = serializers.CharField(source="conversation.thread_id")
    messages = AppendedMessageOutput(many=True)


class MessageListInput(fields.StrictSerializer):
    # query parameters: DRF's own integer fields, which read the strings a query string holds
    before_sequence = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,  # a sequence's column
        help_text="Only messages before this one (older pages).",
    )
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_LIST_LIMIT, default=DEFAULT_LIST_LIMIT
    )


class MessageOutput(serializers.Serializer):
    sequence = serializers.IntegerField()
    role = serializers.CharField()
    text = serializers.CharField()
    data = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()


class MessageListOutput(serializers.Serializer):
    conversation_id = serializers.CharField(source="conversation.thread_id")
    messages = MessageOutput(many=True, help_text="Oldest first: the newest `limit` of the page.")
    next_before_sequence = serializers.IntegerField(
        allow_null=True, help_text="Pass as before_sequence for the older page; null: none."
    )


class MessageDeleteOutput(serializers.Serializer):
    conversation_id = serializers.CharField(source="conversation.thread_id")
    message = MessageOutput(help_text="The message deleted.")


class MessagesClearOutput(serializers.Serializer):
    conversation_id = serializers.CharField(source="conversation.thread_id")
    deleted = serializers.IntegerField(help_text="How many messages were deleted.")


class SelectionInput(fields.StrictSerializer):
    agent_id = serializers.SlugField(max_length=100)
    conversation_id = serializers.CharField(required=False, **ID_FIELD)
    before_sequence = fields.IntegerField(required=False, min_value=1)
    exclude_conversation_id = serializers.CharField(required=False, **ID_FIELD)
    participant_id = serializers.CharField(required=False, **ID_FIELD)
    user_id = fields.UUIDField(required=False)
    project_id = fields.UUIDField(required=False)
    segments_prefix = serializers.ListField(
        child=serializers.CharField(max_length=200, trim_whitespace=False),
        max_length=10,
        required=False,
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "before_sequence" in attrs and "conversation_id" not in attrs:
            raise serializers.ValidationError(
                {"before_sequence": "Only with conversation_id (a sequence is per conversation)."}
            )
        return attrs


ABSTAIN_HELP = (
    "Drop the hits under this deployment's calibrated relevance floors (per mode; hybrid: per"
    " leg), so a question nothing answers may get no hits: `capabilities` names the floors."
)
MIN_RELEVANCE_HELP = (
    "Keyword and semantic only: drop hits whose score (BM25; cosine similarity) is under this."
    " Hybrid's fused score is a rank, not a relevance: use `abstain` there."
)


class RecallInput(fields.StrictSerializer):
    selections = SelectionInput(many=True, min_length=1, max_length=MAX_SELECTIONS)
    mode = serializers.ChoiceField(
        choices=list(MODES),
        help_text="list: newest first; keyword: any of the query's words, BM25 (quoted phrases"
        " required, -word excluded); semantic: by meaning; hybrid: both, fused by rank.",
    )
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=[str(r) for r in RECALLABLE_ROLES]),
        min_length=1,
        max_length=2,
        required=False,
        help_text="Whose messages, hits and neighbours alike. Default ['user'].",
    )
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, required=False, trim_whitespace=False)
    top_k = fields.IntegerField(min_value=1, max_value=MAX_TOP_K, default=10)
    readers = ReadersInput(
        required=False,
        help_text="Narrow to these readers (the seed's `readers`): a hit is a message of a"
        " conversation these and the credential's readers may both recall, guarded in the query"
        " before `top_k`; `{}` recalls nothing. Absent: the credential's readers.",
    )
    abstain = fields.BooleanField(required=False, default=False, help_text=ABSTAIN_HELP)
    min_relevance = fields.FloatField(
        required=False, min_value=-1.0, max_value=1_000.0, help_text=MIN_RELEVANCE_HELP
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "min_relevance" in attrs and attrs["mode"] not in ("keyword", "semantic"):
            raise serializers.ValidationError({"min_relevance": MIN_RELEVANCE_HELP})
        if attrs["mode"] == "list" and "query" in attrs:
            raise serializers.ValidationError({"query": "mode 'list' takes no query."})
        if attrs["mode"] != "list" and not attrs.get("query", "").strip():
            raise serializers.ValidationError({"query": f"mode '{attrs['mode']}' needs a query."})
        return attrs


class NeighbourOutput(serializers.Serializer):
    role = serializers.CharField()
    text = serializers.CharField()


class RecalledMessageOutput(serializers.Serializer):
    conversation_id = serializers.CharField(source="message.conversation.thread_id")
    sequence = serializers.IntegerField(source="message.sequence")
    role = serializers.CharField(source="message.role")
    text = serializers.CharField(source="message.text")
    created_at = serializers.DateTimeField(source="message.created_at")
    agent_id = serializers.CharField(source="message.conversation.agent.agent_id")
    project_id = fields.UUIDField(source="message.conversation.project_id", allow_null=True)
    participant_id = serializers.CharField(
        source="message.conversation.participant_id", allow_null=True
    )
    user_id = fields.UUIDField(source="message.conversation.user_id", allow_null=True)
    before = NeighbourOutput(allow_null=True)
    after = NeighbourOutput(allow_null=True)


class RecallHitOutput(serializers.Serializer):
    message = RecalledMessageOutput(source="*")
    score = serializers.FloatField(
        allow_null=True,
        help_text="BM25 (keyword), cosine similarity (semantic), the fused reciprocal-rank score"
        " (hybrid), null (list).",
    )
    ranks = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="The hit's 1-based rank in each leg that found it ({} for list).",
    )


class RecallOutput(serializers.Serializer):
    hits = RecallHitOutput(many=True)
    reranker = serializers.ChoiceField(
        choices=["applied", "skipped"],  # retrieval.cross_encoder's
        required=False,
        help_text="Only with the operator's cross-encoder, for a query: `applied` (hits in its"
        " order), or `skipped` (slow or down: hits in the recall's own order).",
    )
