from __future__ import annotations

from rest_framework import serializers

from api import fields


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
