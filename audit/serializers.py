from __future__ import annotations

from rest_framework import serializers

from api import fields
from api.fields import StrictSerializer, TextField
from audit.models import AuditEvent, Outcome, Phase

MAX_PAGE = 500


class AuditQueryInput(StrictSerializer):
    since_seq = serializers.IntegerField(
        min_value=0,
        required=False,
        help_text="The cursor: the events after this seq, oldest first (0: from the first). "
        "Without it, the most recent `limit` events, still oldest first.",
    )
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
    project_id = serializers.UUIDField(
        required=False,
        help_text="Alone: the events of this project (the event's, or a touched fact's). With "
        "`type` or another scope key: part of the scope one target must have.",
    )
    # The seed's `kind` and `scope` criteria, named as GET /v1/facts names them: events that
    # touched (or, touching none, asked for) a fact of this type whose scope has every given
    # key equal, in one target.
    type = TextField(required=False, max_length=100, help_text="A fact type the event touched.")
    org_id = fields.UUIDField(required=False)
    user_id = fields.UUIDField(required=False)
    participant_id = TextField(required=False, max_length=200)
    thread_id = TextField(required=False, max_length=200)
    session_id = TextField(required=False, max_length=200)

    SCOPE_KEYS = ("org_id", "project_id", "user_id", "participant_id", "thread_id", "session_id")

    def scope(self) -> dict[str, object]:
        return {k: self.validated_data[k] for k in self.SCOPE_KEYS if k in self.validated_data}


class AuditScopeOutput(serializers.Serializer):
    """A fact's scope, naming only the containers set."""

    org_id = serializers.CharField(required=False)
    project_id = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    participant_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    session_id = serializers.CharField(required=False)


class AuditTargetOutput(serializers.Serializer):
    type = serializers.CharField(allow_null=True, help_text="The fact type; null when not known.")
    scope = AuditScopeOutput()


class AuditEventOutput(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "seq",
            "timestamp",
            "phase",
            "outcome",
            "error_code",
            "error",
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
            "targets",
        ]

    targets = AuditTargetOutput(many=True)


class AuditPageOutput(serializers.Serializer):
    events = AuditEventOutput(many=True)
    next_since_seq = serializers.IntegerField(
        help_text="Pass as since_seq for the next page: the last seq returned (none returned: "
        "since_seq, or 0)."
    )
