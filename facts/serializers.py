"""Input serializers validate requests (unknown fields are an error, not silently dropped);
output serializers render revisions in the seed's Fact shape, snake_case. Neither saves nor
queries: views call services and QuerySet methods."""

from __future__ import annotations

import json
from datetime import datetime, tzinfo
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from api import fields
from api.fields import PatternField, StrictSerializer, TextField
from facts.models import FactSubjectKind, Review, ReviewState, Revision, Trust
from facts.retention import RetentionInput
from facts.review import REASONS
from facts.scopes import SubjectInput

MAX_CONTENT_BYTES = 32 * 1024
MAX_LIST_LIMIT = 200
MAX_KEEP_DAYS = 100 * 366  # beyond a century, a date arithmetic overflow rather than a policy


class ScopeInput(StrictSerializer):
    org_id = fields.UUIDField(required=False, allow_null=True)
    project_id = fields.UUIDField(required=False, allow_null=True)
    user_id = fields.UUIDField(required=False, allow_null=True)
    participant_id = TextField(required=False, allow_null=True, max_length=200, min_length=1)
    thread_id = TextField(required=False, allow_null=True, max_length=200, min_length=1)
    session_id = TextField(required=False, allow_null=True, max_length=200, min_length=1)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("participant_id") and not attrs.get("project_id"):
            raise serializers.ValidationError(
                {"participant_id": ["A participant's fact names its project (project_id)."]}
            )
        return attrs


class RetentionInputSerializer(StrictSerializer):
    keep_days = fields.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=MAX_KEEP_DAYS
    )
    keep_until = serializers.DateTimeField(required=False, allow_null=True)
    legal_hold = fields.BooleanField(required=False, allow_null=True)

    def to_retention(self) -> RetentionInput:
        return RetentionInput(**self.validated_data)


class SubjectSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=FactSubjectKind.choices)
    id = TextField(max_length=200, min_length=1)


def storable_json(value: Any) -> Any:
    """PostgreSQL's jsonb cannot hold a NUL character: refuse it here rather than fail later."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            raise serializers.ValidationError("NUL characters are not accepted.")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


def _content_size(value: Any) -> Any:
    storable_json(value)
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_CONTENT_BYTES:
        raise serializers.ValidationError(
            f"Content is {size} bytes; at most {MAX_CONTENT_BYTES} are accepted."
        )
    if value is None:
        raise serializers.ValidationError("Content may not be null.")
    return value


def _source(value: Any) -> Any:
    """The seed's `Source` (external-source metadata of a Kind-B, cached-view fact): an object
    naming its `kind`, with `freshness` and `refresh` objects when given. kindmem checks this
    envelope and keeps the rest as written; a bare string or a kindless object is refused."""
    if value is None:
        return value
    if not isinstance(value, dict):
        raise serializers.ValidationError(
            'A source is an object, e.g. {"kind": "crm", "freshness": {...}, "refresh": {...}}.'
        )
    if not isinstance(value.get("kind"), str) or not value["kind"].strip():
        raise serializers.ValidationError("A source names its `kind` (a non-empty string).")
    for name in ("freshness", "refresh"):
        if name in value and not isinstance(value[name], dict):
            raise serializers.ValidationError(f"A source's `{name}` is an object.")
    return value


class _RevisionInput(StrictSerializer):
    content = serializers.JSONField(validators=[_content_size])
    subjects = SubjectSerializer(many=True, required=False)
    valid_from = serializers.DateTimeField(required=False, allow_null=True)
    valid_until = serializers.DateTimeField(required=False, allow_null=True)
    observed_at = serializers.DateTimeField(required=False, allow_null=True)
    retention = RetentionInputSerializer(required=False)
    source = serializers.JSONField(
        required=False, allow_null=True, validators=[storable_json, _source]
    )
    caused_by_log_id = serializers.ListField(
        child=TextField(max_length=200), required=False, max_length=50
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start, end = attrs.get("valid_from"), attrs.get("valid_until")
        if start and end and start >= end:
            raise serializers.ValidationError({"valid_until": ["Must be after valid_from."]})
        return attrs

    def service_kwargs(self) -> dict[str, Any]:
        data = dict(self.validated_data)
        if "subjects" in data:
            data["subjects"] = [SubjectInput(kind=s["kind"], id=s["id"]) for s in data["subjects"]]
        if "retention" in data:
            data["retention"] = RetentionInput(**data["retention"])
        return data


class FactCreateInput(_RevisionInput):
    type = PatternField(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=100)
    scope = ScopeInput(required=False)
    key = TextField(required=False, allow_null=True, max_length=200, min_length=1)
    tags = serializers.ListField(
        child=TextField(max_length=100, min_length=1), required=False, max_length=50
    )

    def service_kwargs(self) -> dict[str, Any]:
        data = super().service_kwargs()
        if "scope" in data:
            data["scope"] = {k: v for k, v in data["scope"].items() if v is not None}
        return data


class FactSupersedeInput(_RevisionInput):
    expected_version = fields.IntegerField(required=False, min_value=1)


class FactPatchInput(StrictSerializer):
    # a query parameter: a string to parse (kindmem's fields.IntegerField takes JSON numbers)
    expected_version = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Refuse (`conflict`) if the fact moved past this version.",
    )


class FactVerifyInput(StrictSerializer):
    expected_version = fields.IntegerField(required=False, min_value=1)


class FactListInput(StrictSerializer):
    type = TextField(required=False, max_length=100)
    key = TextField(
        required=False, max_length=200, help_text="The slot key (`key` of a write): exact match."
    )
    tag = TextField(required=False, max_length=100)
    org_id = fields.UUIDField(required=False)
    project_id = fields.UUIDField(required=False)
    user_id = fields.UUIDField(required=False)
    participant_id = TextField(required=False, max_length=200)
    thread_id = TextField(required=False, max_length=200)
    session_id = TextField(required=False, max_length=200)
    valid_at = serializers.DateTimeField(required=False)
    as_of = serializers.DateTimeField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIST_LIMIT)
    cursor = fields.CursorField(required=False)

    SCOPE_KEYS = ("org_id", "project_id", "user_id", "participant_id", "thread_id", "session_id")

    def scope(self) -> dict[str, Any]:
        return {k: self.validated_data[k] for k in self.SCOPE_KEYS if k in self.validated_data}


class FactExportInput(FactListInput):
    """`GET /v1/facts`'s filters; an export is every fact they match, not a page."""

    limit = None
    cursor = None


class FactImportInput(StrictSerializer):
    """Scope keys that replace the imported files' own (`project_id` their org too)."""

    org_id = fields.UUIDField(required=False)
    project_id = fields.UUIDField(required=False)
    user_id = fields.UUIDField(required=False)
    participant_id = TextField(required=False, max_length=200, min_length=1)
    thread_id = TextField(required=False, max_length=200, min_length=1)
    session_id = TextField(required=False, max_length=200, min_length=1)

    def scope(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.validated_data.items()}


# ---- output -------------------------------------------------------------------------------


class AttributionOutput(serializers.Serializer):
    kind = serializers.CharField(source="attributed_kind")
    id = serializers.CharField(source="attributed_id")
    agent_version = serializers.CharField(source="attributed_agent_version", allow_null=True)


class GeneratedByOutput(serializers.Serializer):
    run_id = fields.UUIDField(source="generated_by_run_id")
    step_id = serializers.CharField(source="generated_by_step_id", allow_null=True)
    tool_call_id = serializers.CharField(source="generated_by_tool_call_id", allow_null=True)


class RetentionOutput(serializers.Serializer):
    keep_days = serializers.IntegerField(allow_null=True)
    keep_until = serializers.DateTimeField(allow_null=True)
    legal_hold = serializers.BooleanField()


class SubjectOutput(serializers.Serializer):
    kind = serializers.CharField()
    id = serializers.CharField(source="subject_id")


class ScopeOutput(serializers.Serializer):
    org_id = serializers.CharField(required=False)
    project_id = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    participant_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    session_id = serializers.CharField(required=False)

    def to_representation(self, instance: Any) -> Any:
        return instance  # Fact.scope already names only the containers set


class FactOutput(serializers.Serializer):
    """A revision in the seed's Fact shape (snake_case): `id` is the fact, `revision_id` this
    revision. Needs `fact` selected and `subjects` prefetched (no query per row)."""

    id = fields.UUIDField(source="fact_id")
    revision_id = fields.UUIDField(source="id")
    type = serializers.CharField(source="fact.type")
    scope = ScopeOutput(source="fact.scope")
    key = serializers.CharField(source="fact.key", allow_null=True)
    tags = serializers.ListField(source="fact.tags", child=serializers.CharField())
    version = serializers.IntegerField()
    content = serializers.JSONField()
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField(source="fact.created_at")
    updated_at = serializers.DateTimeField(source="created_at")
    trust = serializers.ChoiceField(choices=Trust.choices)
    verified_by = serializers.CharField(allow_null=True)
    verified_at = serializers.DateTimeField(allow_null=True)
    attributed_to = AttributionOutput(source="*")
    generated_by = serializers.SerializerMethodField()
    subjects = SubjectOutput(many=True)
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_until = serializers.DateTimeField(allow_null=True)
    observed_at = serializers.DateTimeField(allow_null=True)
    invalidated_at = serializers.DateTimeField(allow_null=True)
    invalidated_by = serializers.CharField(allow_null=True)
    invalidation_reason = serializers.CharField(allow_null=True)
    review = serializers.ChoiceField(
        source="review_state",
        choices=ReviewState.choices,
        allow_null=True,
        help_text="Null when it never had to wait for a person.",
    )
    retention = RetentionOutput(source="*")
    expires_at = serializers.DateTimeField(allow_null=True)
    source = serializers.JSONField(allow_null=True)
    caused_by_log_id = serializers.ListField(child=serializers.CharField())
    supersedes = fields.UUIDField(source="supersedes_id", allow_null=True)
    # pending | done | failed | none: whether semantic search can find this revision yet
    embedding_state = serializers.CharField()

    def get_generated_by(self, revision: Revision) -> dict[str, Any] | None:
        if revision.generated_by_run_id is None:
            return None
        return GeneratedByOutput(revision).data

    def to_representation(self, instance: Revision) -> dict[str, Any]:
        """What the declared fields render, written out: DRF's field-by-field rendering took
        ~0.3 ms a fact, most of a search's serialisation (bench/peers.py). The fields above
        remain the schema; tests/facts/test_output.py holds the two renderings equal."""
        revision, fact = instance, instance.fact
        run_id = revision.generated_by_run_id
        zone = timezone.get_current_timezone()

        def _datetime(value: datetime | None) -> str | None:
            return None if value is None else _iso(value, zone)

        return {
            "id": _text(revision.fact_id),
            "revision_id": _text(revision.id),
            "type": _text(fact.type),
            "scope": fact.scope,
            "key": _text(fact.key),
            "tags": _texts(fact.tags),
            "version": None if revision.version is None else int(revision.version),
            "content": revision.content,
            "content_hash": _text(revision.content_hash),
            "created_at": _datetime(fact.created_at),
            "updated_at": _datetime(revision.created_at),
            "trust": _TRUST.to_representation(revision.trust),
            "verified_by": _text(revision.verified_by),
            "verified_at": _datetime(revision.verified_at),
            "attributed_to": {
                "kind": _text(revision.attributed_kind),
                "id": _text(revision.attributed_id),
                "agent_version": _text(revision.attributed_agent_version),
            },
            "generated_by": None
            if run_id is None
            else {
                "run_id": str(run_id),
                "step_id": _text(revision.generated_by_step_id),
                "tool_call_id": _text(revision.generated_by_tool_call_id),
            },
            "subjects": [
                {"kind": _text(s.kind), "id": _text(s.subject_id)} for s in revision.subjects.all()
            ],
            "valid_from": _datetime(revision.valid_from),
            "valid_until": _datetime(revision.valid_until),
            "observed_at": _datetime(revision.observed_at),
            "invalidated_at": _datetime(revision.invalidated_at),
            "invalidated_by": _text(revision.invalidated_by),
            "invalidation_reason": _text(revision.invalidation_reason),
            "review": _text(revision.review_state),
            "retention": {
                "keep_days": None if revision.keep_days is None else int(revision.keep_days),
                "keep_until": _datetime(revision.keep_until),
                "legal_hold": None if revision.legal_hold is None else bool(revision.legal_hold),
            },
            "expires_at": _datetime(revision.expires_at),
            "source": revision.source,
            "caused_by_log_id": _texts(revision.caused_by_log_id),
            "supersedes": _text(revision.supersedes_id),
            "embedding_state": _text(revision.embedding_state),
        }


# FactOutput's renderings of one value, as its fields make them (None stays None).
_TRUST = serializers.ChoiceField(choices=Trust.choices)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _texts(values: Any) -> list[str | None] | None:
    return None if values is None else [_text(v) for v in values]


def _iso(value: datetime, zone: tzinfo) -> str:
    """DRF's DateTimeField rendering (ISO 8601 in the current time zone, UTC as `Z`)."""
    aware = value.astimezone(zone) if timezone.is_aware(value) else timezone.make_aware(value, zone)
    text = aware.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class ReviewReasonsOutput(serializers.Serializer):
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=REASONS))


# What a write's answer says of the value it names, beside `outcome` (which says what the write
# did, as the seed's results do): `stored`, readable as the answer shows it; `pending-review`,
# written and waiting for a person, unreadable by every read until approved. An agent reading
# `outcome: created` alone took a memory waiting for review for a stored one.
WRITE_STATUSES = ("stored", "pending-review")


def write_status(revision: Any) -> str:
    return "pending-review" if revision.review == Review.PENDING else "stored"


class FactWriteOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["created", "superseded", "verified", "unchanged", "deleted"]
    )
    status = serializers.ChoiceField(
        choices=WRITE_STATUSES,
        help_text="stored: readable now; pending-review: waits for a person, read by no one.",
    )
    fact = FactOutput()
    # An agent's write that waits for a person: its approval, and why it waits.
    approval_id = fields.UUIDField(allow_null=True)
    review = ReviewReasonsOutput(allow_null=True)


class FileImportedOutput(serializers.Serializer):
    file = serializers.CharField(help_text="The file's name in the archive (`<id>.md` alone).")
    id = serializers.CharField(help_text="The file's own id (its envelope's).")
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "superseded"])
    fact_id = fields.UUIDField(help_text="The fact it is in this tenant.")
    revision_id = fields.UUIDField()
    # an agent's file that waits for a person: its approval, and why it waits
    approval_id = fields.UUIDField(allow_null=True)
    review = ReviewReasonsOutput(allow_null=True)


class LinkImportedOutput(serializers.Serializer):
    file = serializers.CharField(help_text="The file whose `links` asked for it.")
    type = serializers.CharField()
    target = serializers.CharField(help_text="The target's id in the files.")
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "dropped"])
    reason = serializers.ChoiceField(
        choices=["target-not-imported", "waits-for-review", "not-readable"],
        allow_null=True,
        help_text="Why it was dropped.",
    )
    link_id = fields.UUIDField(allow_null=True)
    source_fact_id = fields.UUIDField(allow_null=True)
    target_fact_id = fields.UUIDField(allow_null=True)


class FactImportOutput(serializers.Serializer):
    files = FileImportedOutput(many=True)
    links = LinkImportedOutput(many=True)


class FactListOutput(serializers.Serializer):
    facts = FactOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class RevisionListOutput(serializers.Serializer):
    revisions = FactOutput(many=True)
