"""Input and output of the remember and approvals endpoints. Validate and render only."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api import fields
from api.fields import PatternField, StrictSerializer, TextField
from approvals.models import Approval, ApprovalStatus
from facts.review import REASONS
from facts.serializers import WRITE_STATUSES, FactOutput, write_status

# A hard cap before the service's own limit (KINDMEM_REMEMBER_MAX_CHARS) answers clearly.
MAX_TEXT_INPUT = 100_000
MAX_LIST_LIMIT = 200


class RememberInput(StrictSerializer):
    type = PatternField(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=100)
    text = TextField(allow_blank=True, trim_whitespace=False, max_length=MAX_TEXT_INPUT)
    key = TextField(required=False, allow_null=True, max_length=200, min_length=1)
    valid_until = serializers.DateTimeField(required=False, allow_null=True)
    step_id = TextField(required=False, allow_null=True, max_length=200, min_length=1)
    tool_call_id = TextField(max_length=200, min_length=1)


class ReviewOutput(serializers.Serializer):
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=REASONS))


class RememberOutput(serializers.Serializer):
    """The seed's RememberFactResult, snake_case."""

    outcome = serializers.ChoiceField(choices=["created", "superseded", "replayed"])
    status = serializers.ChoiceField(
        choices=WRITE_STATUSES,
        help_text="stored: readable now; pending-review: waits for a person, read by no one.",
    )
    fact = FactOutput()
    approval_id = serializers.UUIDField(allow_null=True)
    review = ReviewOutput(allow_null=True)


class ApprovalListInput(StrictSerializer):
    status = serializers.ChoiceField(
        choices=ApprovalStatus.choices, required=False, default=ApprovalStatus.PENDING
    )
    reason = serializers.ChoiceField(choices=REASONS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIST_LIMIT)
    cursor = fields.CursorField(required=False)


class DecisionInput(StrictSerializer):
    note = TextField(required=False, allow_blank=True, max_length=2000, default="")


class ApproveInput(DecisionInput):
    verify = fields.BooleanField(required=False, default=False)


class FindingOutput(serializers.Serializer):
    reason = serializers.CharField()
    rule = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    match = serializers.CharField()


class StaleOutput(serializers.Serializer):
    """Why approving is refused now (`stale-approval`): the fact moved on since the memory was
    computed from `base_version`."""

    base_version = serializers.IntegerField(allow_null=True)
    current_version = serializers.IntegerField(allow_null=True)
    change = serializers.ChoiceField(choices=["changed", "deleted", "erased"])
    message = serializers.CharField()


class ApprovalOutput(serializers.Serializer):
    """Needs `revision__fact` selected and `revision__subjects` prefetched; `stale` is read
    from the approval's `staleness` where the view set it (a page of the queue)."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ApprovalStatus.choices)
    reasons = serializers.ListField(child=serializers.CharField())
    findings = FindingOutput(many=True)
    agent_id = serializers.SerializerMethodField()
    agent_version = serializers.CharField()
    project_id = serializers.UUIDField(allow_null=True)
    run_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(allow_blank=True)
    note = serializers.CharField(allow_blank=True)
    fact = FactOutput(source="revision")
    verified_revision_id = serializers.UUIDField(allow_null=True)
    # the version of the fact the memory was computed from (None: a new fact)
    base_version = serializers.IntegerField(source="revision.base_version", allow_null=True)
    stale = serializers.SerializerMethodField()

    def get_agent_id(self, approval: Approval) -> str:
        # the revision's attribution names the agent even when its row has gone
        return approval.revision.attributed_id

    @extend_schema_field(StaleOutput(allow_null=True))
    def get_stale(self, approval: Approval) -> dict[str, Any] | None:
        staleness = getattr(approval, "staleness", None)
        if staleness is None:
            return None
        return {**staleness.details(), "message": staleness.message}


class ApprovalListOutput(serializers.Serializer):
    approvals = ApprovalOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def remember_body(remembered: Any) -> dict[str, Any]:
    approval = remembered.approval
    return RememberOutput(
        {
            "outcome": remembered.result.outcome,
            "status": write_status(remembered.result.revision),
            "fact": remembered.result.revision,
            "approval_id": approval.id if approval else None,
            "review": {"reasons": approval.reasons} if approval else None,
        }
    ).data
