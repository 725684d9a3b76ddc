"""Input and output serializers of the privacy API. They validate and render; no queries."""

from __future__ import annotations

import uuid
from typing import Any

from rest_framework import serializers

from api.fields import StrictSerializer, TextField
from kindmem.models import SubjectKind

PERSON_KINDS = [SubjectKind.PARTICIPANT, SubjectKind.USER, SubjectKind.EXTERNAL]


def _check_target(kind: str, target_id: str) -> None:
    if not target_id.strip():
        raise serializers.ValidationError({"target_id": ["Must not be blank."]})
    if "\x00" in target_id:
        raise serializers.ValidationError({"target_id": ["Must not contain NUL characters."]})
    if kind == SubjectKind.USER:
        try:
            uuid.UUID(target_id)
        except ValueError:
            raise serializers.ValidationError(
                {"target_id": ["A Kindgi user is named by their UUID."]}
            ) from None


class ErasureCreateInput(StrictSerializer):
    target_kind = serializers.ChoiceField(choices=SubjectKind.choices)
    target_id = TextField(max_length=200, trim_whitespace=False)
    reason = TextField(max_length=2000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _check_target(attrs["target_kind"], attrs["target_id"])
        if "\x00" in attrs["reason"]:
            raise serializers.ValidationError({"reason": ["Must not contain NUL characters."]})
        return attrs


class ErasureQueryInput(StrictSerializer):
    dry_run = serializers.BooleanField(
        default=False,
        help_text=(
            "true: answer what this erasure would erase now (counts per kind, what legal hold "
            "would keep, whether anything matches the id at all) and start nothing."
        ),
    )


class ErasurePreviewInput(ErasureCreateInput):
    """A dry run takes the same body; its reason may be left out."""

    reason = TextField(max_length=2000, required=False, default="")


class HeldItemOutput(serializers.Serializer):
    kind = serializers.CharField()
    id = serializers.CharField()
    fact_id = serializers.CharField()
    version = serializers.IntegerField()
    hold = serializers.CharField()


class ErasedBeforeOutput(serializers.Serializer):
    id = serializers.UUIDField()
    finished_at = serializers.DateTimeField(allow_null=True)


class ErasurePreviewOutput(serializers.Serializer):
    dry_run = serializers.BooleanField(default=True)
    target_kind = serializers.CharField(source="subject.kind")
    target_id = serializers.CharField(source="subject.id")
    nothing_matches = serializers.BooleanField(
        help_text="Nothing in the tenant is about this id (often a typo): every count is 0."
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Rows the erasure would erase, per kind (the receipt's `counts_by_kind`).",
    )
    total = serializers.IntegerField()
    held = HeldItemOutput(many=True, help_text="Kept under legal hold (at most 100 listed).")
    held_count = serializers.IntegerField()
    unfinished_erasure_id = serializers.UUIDField(
        source="unfinished.id",
        allow_null=True,
        default=None,
        help_text="An erasure of this target already under way: starting again answers it.",
    )
    erased_before = ErasedBeforeOutput(
        many=True, help_text="Completed erasures of this target, found by their reference."
    )


class ProgressOutput(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class ErasureOutput(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()
    target_kind = serializers.CharField()
    target_id = serializers.CharField(help_text="Empty once the erasure completes.")
    reason = serializers.CharField()
    requested_by = serializers.CharField()
    target_reference = serializers.CharField(
        help_text="A keyed hash of the target, kept after it completes: recognises the id."
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress = serializers.SerializerMethodField()
    receipt = serializers.JSONField(allow_null=True)

    def get_progress(self, obj: Any) -> dict[str, int]:
        return ProgressOutput(obj.progress_summary).data


class AccessRequestCreateInput(StrictSerializer):
    subject_kind = serializers.ChoiceField(choices=[(k.value, k.label) for k in PERSON_KINDS])
    subject_id = TextField(max_length=200, trim_whitespace=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _check_target(attrs["subject_kind"], attrs["subject_id"])
        return attrs


class DownloadLinksOutput(serializers.Serializer):
    json = serializers.CharField()
    zip = serializers.CharField()
    expires_in_seconds = serializers.IntegerField()


class AccessRequestOutput(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()
    subject_kind = serializers.CharField()
    subject_id = serializers.CharField()
    requested_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    download = DownloadLinksOutput(allow_null=True, help_text="Signed links; null until done.")


class DownloadInput(StrictSerializer):
    token = serializers.CharField(max_length=500)
    # Not `format`: DRF reads that query parameter for content negotiation.
    export = serializers.ChoiceField(choices=["json", "zip"], default="json")
