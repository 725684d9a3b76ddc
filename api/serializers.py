"""The error shape, as the API schema documents it."""

from __future__ import annotations

from rest_framework import serializers


class ErrorOutput(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField(allow_null=True)
