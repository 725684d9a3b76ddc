"""Input and output of the extraction route. Validate and render only."""

from __future__ import annotations

from rest_framework import serializers

from api import fields
from api.fields import StrictSerializer
from extraction.models import Action, DecisionOutcome, ExtractionDecision, JobStatus
from facts.review import REASONS


class ExtractInput(StrictSerializer):
    """Nothing to choose: the messages are the conversation's since its watermark, the types
    its agent's declarations. Unknown fields are refused (a misspelt option is not ignored)."""


class ExtractionDecisionOutput(serializers.Serializer):
    index = serializers.IntegerField(help_text="Its place in the model's answer.")
    action = serializers.ChoiceField(choices=Action.choices)
    type = serializers.CharField()
    text = serializers.SerializerMethodField(
        help_text="The memory's text; null while it waits for a reviewer (no read sees it)."
    )
    cited = serializers.ListField(
        child=serializers.IntegerField(), help_text="The sequences of the messages it rests on."
    )
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices)
    fact_id = fields.UUIDField()
    revision_id = fields.UUIDField()
    approval_id = fields.UUIDField(allow_null=True)
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=REASONS))

    def get_text(self, decision: ExtractionDecision) -> str | None:
        return None if decision.approval_id else decision.text


class ExtractionJobOutput(serializers.Serializer):
    id = fields.UUIDField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    first_sequence = serializers.IntegerField()
    last_sequence = serializers.IntegerField()
    model = serializers.CharField(help_text="The model that answered (empty until it has).")
    prompt_version = serializers.CharField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    error_code = serializers.CharField(
        help_text="Why it was refused or failed: `unparseable`, `undeclared-type`, "
        "`cites-outside-range`, `unknown-memory`, `erasure-in-progress`, `model-failed`, ..."
    )
    error = serializers.CharField()
    decisions = ExtractionDecisionOutput(many=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ExtractOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["queued", "already-queued", "up-to-date"],
        help_text="`queued`: a new job; `already-queued`: the one queued or running before; "
        "`up-to-date`: no message since the watermark.",
    )
    conversation_id = serializers.CharField()
    extracted_through = serializers.IntegerField(
        help_text="The watermark: the last message sequence an applied extraction covered."
    )
    last_sequence = serializers.IntegerField()
    job = ExtractionJobOutput(allow_null=True)


class ExtractionStateOutput(serializers.Serializer):
    conversation_id = serializers.CharField()
    extracted_through = serializers.IntegerField()
    last_sequence = serializers.IntegerField()
    jobs = ExtractionJobOutput(many=True, help_text="The newest extractions first.")
