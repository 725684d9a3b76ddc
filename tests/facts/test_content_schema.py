"""Per-type content schemas (seed 003's `registerSchema`, Draft 2020-12): every write, supersede,
patch and `remember` of a type is validated against its schema, problems named by path, nothing
written; a schema is checked when saved; a stored fact that no longer fits still reads. And a
fact's `source` is the seed's object, not any string."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from api.content_schema import schema_problems
from facts.models import Fact, Revision, WritePolicy
from kindmem import declarations
from tests import factories
from tests.facts.conftest import create

pytestmark = pytest.mark.django_db

PROFILE_SCHEMA = {
    "type": "object",
    "required": ["city"],
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "pets": {"type": "array", "items": {"type": "string"}},
    },
}


@pytest.fixture
def profile_schema(world):
    return WritePolicy.objects.create(
        tenant=world.tenant, fact_type="profile", content_schema=PROFILE_SCHEMA
    )


def _write(api, world, content):
    return create(api, world.admin, type="profile", content=content)


def test_a_write_that_fits_its_types_schema_is_written(api, world, profile_schema) -> None:
    response = _write(api, world, {"city": "Porto", "age": 40, "pets": ["cat"]})
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(
    ("content", "paths"),
    [
        ({"age": 40}, ["content"]),  # `city` is required
        ({"city": "Porto", "age": "forty"}, ["content.age"]),
        ({"city": "Porto", "pets": ["cat", 7]}, ["content.pets[1]"]),
        ({"city": "", "age": -1}, ["content.age", "content.city"]),
        ("just text", ["content"]),
    ],
)
def test_a_write_that_does_not_fit_is_refused_naming_each_path(
    api, world, profile_schema, content, paths
) -> None:
    response = _write(api, world, content)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid-fact"
    assert sorted(body["details"]) == paths
    assert Fact.objects.count() == 0


def test_supersede_and_patch_are_validated_too(api, world, profile_schema) -> None:
    fact = _write(api, world, {"city": "Porto"}).json()["fact"]
    superseded = api.post(
        f"/v1/facts/{fact['id']}/supersede",
        {"content": {"city": 7}},
        format="json",
        **world.admin.headers,
    )
    assert superseded.status_code == 400
    assert list(superseded.json()["details"]) == ["content.city"]
    # a patch that deletes a required field is refused, naming the content
    patched = api.patch(
        f"/v1/facts/{fact['id']}",
        json.dumps({"content": {"city": None}}),
        content_type="application/merge-patch+json",
        **world.admin.headers,
    )
    assert patched.status_code == 400
    assert patched.json()["code"] == "invalid-fact"
    assert "'city' is a required property" in patched.json()["details"]["content"][0]
    assert Revision.objects.filter(fact_id=fact["id"]).count() == 1


def test_a_stored_fact_that_no_longer_fits_a_changed_schema_still_reads(
    api, world, profile_schema
) -> None:
    fact = _write(api, world, {"city": "Porto"}).json()["fact"]
    # when the type's schema changes so that the stored content no longer fits
    profile_schema.content_schema = {**PROFILE_SCHEMA, "required": ["city", "age"]}
    profile_schema.save()
    # then the fact reads, lists and is found as it was written
    read = api.get(f"/v1/facts/{fact['id']}", **world.admin.headers)
    assert read.status_code == 200
    assert read.json()["content"] == {"city": "Porto"}
    listed = api.get("/v1/facts?type=profile", **world.admin.headers).json()["facts"]
    assert [f["id"] for f in listed] == [fact["id"]]
    # and a new write must fit the new schema
    assert _write(api, world, {"city": "Faro"}).status_code == 400


@pytest.mark.parametrize(
    "schema",
    [
        "not an object",
        {"type": "no-such-type"},
        {"properties": {"a": {"minLength": "three"}}},
        {"$ref": "https://example.com/schema.json"},
        {"properties": {"a": {"$ref": "other.json#/x"}}},
    ],
)
def test_a_schema_that_cannot_be_used_is_refused_when_saved(world, schema) -> None:
    assert schema_problems(schema)
    policy = WritePolicy(tenant=world.tenant, fact_type="profile", content_schema=schema)
    with pytest.raises(ValidationError):
        policy.full_clean()
    with pytest.raises(ValidationError):
        declarations.validate_memory_declarations(
            [{"type": "profile", "scope": "user", "keep_days": 9, "schema": schema}]
        )


def test_a_local_ref_is_followed(api, world) -> None:
    WritePolicy.objects.create(
        tenant=world.tenant,
        fact_type="profile",
        content_schema={
            "$defs": {"city": {"type": "string", "maxLength": 5}},
            "properties": {"city": {"$ref": "#/$defs/city"}},
        },
    )
    assert _write(api, world, {"city": "Porto"}).status_code == 201
    refused = _write(api, world, {"city": "Amsterdam"})
    assert list(refused.json()["details"]) == ["content.city"]


def test_remember_fits_the_declared_schema_and_the_tenants(api, world) -> None:
    # given an agent declaring notes of at most 20 characters
    world.agent.memory_declarations = [
        {
            "type": "note",
            "scope": "participant",
            "keep_days": 30,
            "schema": {"properties": {"text": {"maxLength": 20}}},
        }
    ]
    world.agent.full_clean()
    world.agent.save()
    run = factories.run_create(world.app, world.project, agent=world.agent)

    def remember(text, call):
        body = {"type": "note", "text": text, "tool_call_id": call}
        return api.post("/v1/remember", body, format="json", **run.headers)

    assert remember("likes tea", "c1").status_code == 201
    too_long = remember("likes tea, green, from Japan, hot", "c2")
    assert too_long.status_code == 400
    assert too_long.json()["code"] == "invalid-fact"
    assert list(too_long.json()["details"]) == ["content.text"]
    # and the tenant's own schema for the type applies beside it
    WritePolicy.objects.create(
        tenant=world.tenant,
        fact_type="note",
        content_schema={"properties": {"text": {"pattern": "^[a-z ,]+$"}}},
    )
    assert remember("Likes Tea", "c3").status_code == 400
    assert Fact.objects.filter(type="note").count() == 1


@pytest.mark.parametrize(
    ("source", "status"),
    [
        ("garbage-string", 400),
        (42, 400),
        ({"freshness": {}}, 400),
        ({"kind": ""}, 400),
        ({"kind": "crm", "freshness": "yesterday"}, 400),
        ({"kind": "crm"}, 201),
        (
            {
                "kind": "crm",
                "ref": "contact/42",
                "freshness": {"fetched_at": "2026-01-01T00:00:00Z"},
                "refresh": {"strategy": "on-read"},
            },
            201,
        ),
        (None, 201),
    ],
)
def test_a_source_is_the_seeds_object(api, world, source, status) -> None:
    response = create(api, world.admin, source=source)
    assert response.status_code == status, response.json()
    if status == 400:
        assert "source" in response.json()["details"]
        assert Fact.objects.count() == 0
