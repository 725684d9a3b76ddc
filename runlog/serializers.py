from __future__ import annotations

from rest_framework import serializers

from api.fields import StrictSerializer
from runlog.models import LogKind
from runlog.services import payload_problem


class PayloadField(serializers.JSONField):
    """A JSON object that the run log can store and hash (see `services.payload_problem`);
    checked before DRF's own JSON checks, which recurse."""

    def to_internal_value(self, data: object) -> object:
        if not isinstance(data, dict):
            raise serializers.ValidationError("The payload must be a JSON object.")
        problem = payload_problem(data)
        if problem is not None:
            raise serializers.ValidationError(f"{problem[0]} (at {problem[1]})")
        return super().to_internal_value(data)


class LogAppendInput(StrictSerializer):
    kind = serializers.ChoiceField(
        choices=LogKind.choices,
        error_messages={"invalid_choice": "Unknown log kind {input!r}; see LogKind."},
    )
    payload = PayloadField(help_text="A JSON object.")
    caused_by_log_id = serializers.UUIDField(required=False, allow_null=True)


class LogListInput(StrictSerializer):
    after_sequence = serializers.IntegerField(min_value=0, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)


class LogEntryOutput(serializers.Serializer):
    id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    sequence = serializers.IntegerField()
    kind = serializers.CharField()
    payload = serializers.JSONField(allow_null=True, help_text="null once erased.")
    content_hash = serializers.CharField()
    payload_salt = serializers.CharField(allow_null=True)
    prev_hash = serializers.CharField()
    entry_hash = serializers.CharField()
    hash_version = serializers.IntegerField()
    payload_erased_at = serializers.DateTimeField(allow_null=True)
    caused_by_log_id = serializers.UUIDField(source="caused_by_id", allow_null=True)
    created_at = serializers.DateTimeField()


class LogPageOutput(serializers.Serializer):
    entries = LogEntryOutput(many=True)
    next_after_sequence = serializers.IntegerField(
        allow_null=True, help_text="Pass as after_sequence for the next page; null at the end."
    )


class LogVerifyOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    length = serializers.IntegerField()
    head = serializers.CharField(help_text="The last entry's entry_hash (64 zeros if empty).")
    first_bad_sequence = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    unverifiable_sequences = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Erased version 1 entries: their links are checked, their hash cannot be.",
    )
