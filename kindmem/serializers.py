from __future__ import annotations

import json
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api import fields
from api.parsers import json_depth_exceeds
from kindmem.access import Readers

# Ids a narrowing may name per field: a user key's projects, a run's one of each; far above
# what any credential reads, and a bound on the guard's IN lists.
MAX_READER_IDS = 1_000


class RunMintInput(fields.StrictSerializer):
    agent_id = serializers.SlugField(max_length=100)
    project_id = fields.UUIDField()
    participant_id = serializers.CharField(
        max_length=200, required=False, allow_null=True, trim_whitespace=False
    )
    user_id = fields.UUIDField(required=False, allow_null=True)
    thread_id = serializers.CharField(
        max_length=200, required=False, allow_null=True, trim_whitespace=False
    )
    session_id = serializers.CharField(
        max_length=200, required=False, allow_null=True, trim_whitespace=False
    )


class RunOutput(serializers.Serializer):
    id = fields.UUIDField()
    agent_id = serializers.CharField(source="agent.agent_id")
    agent_version = serializers.CharField()
    project_id = fields.UUIDField()
    participant_id = serializers.CharField(allow_null=True)
    user_id = fields.UUIDField(allow_null=True)
    thread_id = serializers.CharField(allow_null=True)
    session_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class RunMintOutput(serializers.Serializer):
    run = RunOutput()
    token = serializers.CharField(help_text="The run token; shown once. Use it as a Bearer token.")


class ReadersOutput(serializers.Serializer):
    all = serializers.BooleanField()
    project_ids = serializers.ListField(child=serializers.CharField())
    org_ids = serializers.ListField(child=serializers.CharField())
    user_ids = serializers.ListField(child=serializers.CharField())
    participant_ids = serializers.ListField(child=serializers.CharField())
    thread_ids = serializers.ListField(child=serializers.CharField())
    on_behalf_of_project_ids = serializers.ListField(child=serializers.CharField())


class WhoAmIOutput(serializers.Serializer):
    kind = serializers.CharField()
    tenant_id = fields.UUIDField()
    principal = serializers.CharField()
    run_id = fields.UUIDField(allow_null=True)
    readers = ReadersOutput()


READER_FIELDS = (
    "project_ids",
    "org_ids",
    "user_ids",
    "participant_ids",
    "thread_ids",
    "on_behalf_of_project_ids",
)


def readers_snapshot(readers: Readers) -> dict[str, Any]:
    """A narrowing as the audit event's query keeps it."""
    return {"all": readers.all} | {name: sorted(getattr(readers, name)) for name in READER_FIELDS}


def _id_list(child: serializers.Field) -> serializers.ListField:
    return serializers.ListField(child=child, required=False, max_length=MAX_READER_IDS)


class ReadersInput(fields.StrictSerializer):
    """Readers a read is narrowed to (the seed's `MemoryReaders`, as `GET /v1/me` names them):
    a row is returned only if these readers may read it *and* the credential's may
    (`kindmem.guards`). Nothing here widens a credential: an id it does not read, or `all`,
    narrows nothing further. `{}` reads tenant-wide facts only (the seed's absent readers)."""

    all = fields.BooleanField(required=False, default=False, help_text="Narrows nothing.")
    project_ids = _id_list(fields.UUIDField())
    org_ids = _id_list(fields.UUIDField())
    user_ids = _id_list(fields.UUIDField())
    participant_ids = _id_list(fields.TextField(max_length=200, allow_blank=True))
    thread_ids = _id_list(fields.TextField(max_length=200, allow_blank=True))
    on_behalf_of_project_ids = _id_list(fields.UUIDField())

    def to_internal_value(self, data: Any) -> Readers:
        given = super().to_internal_value(data)
        return Readers(
            all=given["all"],
            **{name: frozenset(str(v) for v in given.get(name, ())) for name in READER_FIELDS},
        )


@extend_schema_field(OpenApiTypes.STR)
class ReadersQueryField(serializers.Field):
    """`ReadersInput` as a query parameter: its JSON object, as a string."""

    default_error_messages = {"invalid": "Not a JSON object of readers."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "help_text",
            "Narrow to these readers, a JSON object: all, project_ids, org_ids, user_ids,"
            " participant_ids, thread_ids, on_behalf_of_project_ids (lists of ids). A fact is"
            " listed only if these readers and the credential's may both read it; `{}`:"
            " tenant-wide facts only.",
        )
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Readers:
        given = None
        # deep nesting is refused unparsed, as a body is (the parse recurses)
        if isinstance(data, str) and not json_depth_exceeds(data):
            try:
                given = json.loads(data)
            except (ValueError, RecursionError):
                given = None
        if not isinstance(given, dict):
            self.fail("invalid")
        readers = ReadersInput(data=given)
        if not readers.is_valid():
            raise serializers.ValidationError(readers.errors)
        return readers.validated_data

    def to_representation(self, value: Any) -> Any:  # an input field: never rendered
        raise NotImplementedError
