from __future__ import annotations

import pytest

from kindmem.models import Run


def test_missing_credentials_get_401_in_the_error_shape(api, db):
    response = api.get("/v1/me")
    assert response.status_code == 401
    assert set(response.json()) == {"code", "message", "details"}
    assert response.json()["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_malformed_json_is_a_validation_error_and_writes_nothing(api, world):
    response = api.generic(
        "POST",
        "/v1/runs",
        '{"agent_id": "support-bot",',
        content_type="application/json",
        **world.app.headers,
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert Run.objects.count() == 0


def test_wrong_content_type_is_refused_with_415(api, world):
    response = api.generic(
        "POST",
        "/v1/runs",
        "agent_id=support-bot",
        content_type="application/x-www-form-urlencoded",
        **world.app.headers,
    )
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported-media-type"
    assert Run.objects.count() == 0


def test_invalid_fields_are_reported_per_field(api, world):
    response = api.post(
        "/v1/runs",
        {"agent_id": "no spaces allowed", "project_id": "nope"},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation-error"
    assert set(body["details"]) == {"agent_id", "project_id"}


def test_unknown_agent_is_not_found(api, world):
    response = api.post(
        "/v1/runs",
        {"agent_id": "ghost", "project_id": str(world.project.id)},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"


def test_unknown_api_route_answers_json_404(api, db):
    response = api.get("/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"


def test_wrong_method_is_405_in_the_error_shape(api, world):
    response = api.delete("/v1/runs", **world.app.headers)
    assert response.status_code == 405
    assert response.json()["code"] == "method-not-allowed"


def test_openapi_schema_and_docs_are_served(api, db):
    schema = api.get("/v1/schema", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/v1/runs" in schema.json()["paths"]
    docs = api.get("/v1/docs")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()


def test_json_nested_deeper_than_python_recurses_is_a_400_not_a_500(api, world):
    body = '{"agent_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = api.generic(
        "POST", "/v1/runs", body, content_type="application/json", **world.app.headers
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert Run.objects.count() == 0


@pytest.mark.parametrize("not_a_string", [False, 0, 1234])
def test_a_uuid_given_as_a_json_number_or_boolean_is_a_validation_error(api, world, not_a_string):
    # DRF's UUIDField takes an integer as UUID(int=...): `false` became the nil UUID and a
    # search scoped to it answered 200 (found by the fuzzer); the schema says a string
    response = api.post(
        "/v1/facts/search",
        {"query": "tea", "scope": {"user_id": not_a_string}},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "validation-error"
    assert "scope" in response.json()["details"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/facts/search", {"query": "tea", "top_k": "5"}, "top_k"),
        ("/v1/facts/search", {"query": "tea", "top_k": True}, "top_k"),
        (
            "/v1/facts",
            {"type": "note", "content": "x", "retention": {"legal_hold": "yes"}},
            "retention",
        ),
        (
            "/v1/facts",
            {"type": "note", "content": "x", "retention": {"keep_days": "30"}},
            "retention",
        ),
    ],
)
def test_json_numbers_and_booleans_are_not_taken_from_strings(api, world, path, body, field):
    # the schema says integer / boolean: "5" and "yes" are errors, not coerced
    response = api.post(path, body, format="json", **world.admin.headers)
    assert response.status_code == 400, response.json()
    assert field in response.json()["details"]
