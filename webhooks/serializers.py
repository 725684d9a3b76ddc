from __future__ import annotations

from rest_framework import serializers

from api.fields import StrictSerializer
from webhooks.models import EventKind


class WebhookEndpointCreateInput(StrictSerializer):
    url = serializers.URLField(max_length=2000)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EventKind.choices), min_length=1, max_length=20
    )
    include_content = serializers.BooleanField(
        default=False,
        help_text="Payloads carry memory content and people's ids besides ids and kinds. "
        "Off unless the tenant admin opts in.",
    )
    enabled = serializers.BooleanField(default=True)
    description = serializers.CharField(
        max_length=200, required=False, default="", allow_blank=True
    )


class WebhookEndpointOutput(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    include_content = serializers.BooleanField()
    enabled = serializers.BooleanField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()


class WebhookEndpointCreatedOutput(WebhookEndpointOutput):
    secret = serializers.CharField(
        help_text="The signing secret (Standard Webhooks, whsec_...): shown this once."
    )


class WebhookEndpointListOutput(serializers.Serializer):
    endpoints = WebhookEndpointOutput(many=True)
