"""The link routes' serializers: a link's input (create, update, traverse) and its output, a
reached fact rendered as every fact is (`facts.serializers.FactOutput`)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api import fields
from api.fields import PatternField, StrictSerializer, TextField
from facts.links import MAX_HOPS
from facts.serializers import MAX_LIST_LIMIT, FactListInput, FactOutput, storable_json


class LinkCreateInput(StrictSerializer):
    target = fields.UUIDField()
    type = PatternField(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=100)
    confidence = fields.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0)
    provenance = serializers.JSONField(required=False, allow_null=True, validators=[storable_json])
    valid_at = serializers.DateTimeField(required=False, allow_null=True)
    invalid_at = serializers.DateTimeField(required=False, allow_null=True)


class LinkListInput(StrictSerializer):
    hops = serializers.IntegerField(required=False, min_value=1, max_value=MAX_HOPS, default=1)
    direction = serializers.ChoiceField(choices=["out", "in"], required=False, default="out")
    type = TextField(required=False, max_length=100, help_text="Follow links of this type only.")
    at = serializers.DateTimeField(
        required=False, help_text="Follow the links valid at this time (default: now)."
    )
    order = serializers.ChoiceField(
        choices=["nearest", "recency"],
        required=False,
        default="nearest",
        help_text="`nearest`: by hops, then link age; `recency`: newest reached fact first.",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIST_LIMIT)
    fact_type = TextField(required=False, max_length=100, help_text="Reached facts of this type.")
    tag = TextField(required=False, max_length=100, help_text="Reached facts with this tag.")
    org_id = fields.UUIDField(required=False)
    project_id = fields.UUIDField(required=False)
    user_id = fields.UUIDField(required=False)
    participant_id = TextField(required=False, max_length=200)
    thread_id = TextField(required=False, max_length=200)
    session_id = TextField(required=False, max_length=200)

    def traverse_kwargs(self) -> dict[str, Any]:
        data = dict(self.validated_data)
        scope = {k: data.pop(k) for k in FactListInput.SCOPE_KEYS if k in data}
        return {**data, "scope": scope}


class LinkUpdateInput(StrictSerializer):
    confidence = fields.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0)
    provenance = serializers.JSONField(required=False, allow_null=True, validators=[storable_json])
    valid_at = serializers.DateTimeField(required=False, allow_null=True)
    invalid_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="From then on the link is not traversed."
    )


class LinkOutput(serializers.Serializer):
    id = fields.UUIDField()
    source = fields.UUIDField(source="source_id")  # type: ignore[assignment]
    target = fields.UUIDField(source="target_id")
    type = serializers.CharField()
    confidence = serializers.FloatField(allow_null=True)
    provenance = serializers.JSONField(allow_null=True)
    valid_at = serializers.DateTimeField(allow_null=True)
    invalid_at = serializers.DateTimeField(allow_null=True)
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()


class LinkChangeOutput(serializers.Serializer):
    link = LinkOutput()


class LinkCreateOutput(serializers.Serializer):
    created = serializers.BooleanField()
    link = LinkOutput()


class ReachedOutput(serializers.Serializer):
    hops = serializers.IntegerField()
    link = LinkOutput()
    fact = FactOutput(source="revision")


class LinkTraversalOutput(serializers.Serializer):
    reached = ReachedOutput(many=True)
