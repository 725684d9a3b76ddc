from __future__ import annotations

from rest_framework import serializers

from audit.models import AuditEvent, Outcome, Phase
from kindmem.fields import StrictSerializer

MAX_PAGE = 500


class AuditQueryInput(StrictSerializer):
    since_seq = serializers.IntegerField(min_value=0, required=False, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_PAGE, required=False, default=100)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    phase = serializers.ChoiceField(choices=Phase.choices, required=False)
    outcome = serializers.ChoiceField(choices=Outcome.choices, required=False)
    kind = serializers.CharField(max_length=20, required=False, trim_whitespace=False)
    subject = serializers.RegexField(
        r"^(participant|user|external):.+$", max_length=250, required=False
    )
    principal = serializers.CharField(max_length=100, required=False, trim_whitespace=False)
    fact_id = serializers.UUIDField(required=False)
    project_id = serializers.UUIDField(required=False)


class AuditEventOutput(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "seq",
            "timestamp",
            "phase",
            "outcome",
            "error_code",
            "kind",
            "endpoint",
            "principal",
            "principal_kind",
            "run_id",
            "agent_id",
            "object_ids",
            "subjects",
            "project_id",
            "query_snapshot",
        ]


class AuditPageOutput(serializers.Serializer):
    events = AuditEventOutput(many=True)
    next_since_seq = serializers.IntegerField(
        help_text="Pass as since_seq for the next page (the last seq returned, or since_seq)."
    )
