from __future__ import annotations

import base64
import uuid

import pytest

from facts.models import Fact
from kindmem.models import Run
from recall.models import Conversation
from tests import factories


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


# ---- hole 18: values PostgreSQL cannot hold, crafted cursors ------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"type": "note", "content": "x\\ud800"}', "content"),
        ('{"type": "note", "content": {"text": "x\\udfff"}}', "content"),
        ('{"type": "note", "content": "x", "source": "x\\ud800"}', "source"),
        ('{"type": "note", "content": "x", "source": {"k\\ud800": 1}}', "source"),
    ],
)
def test_hole_18_lone_surrogate_in_a_fact_body_is_400(api, world, body, field):
    # given: JSON whose escapes decode to a lone surrogate, which PostgreSQL cannot store
    # when: it is posted as a fact
    response = api.generic(
        "POST", "/v1/facts", body, content_type="application/json", **world.admin.headers
    )
    # then: a validation error naming the field, nothing written
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation-error"
    assert field in response.json()["details"]
    assert not Fact.objects.exists()


def test_hole_18_lone_surrogate_anywhere_in_any_json_body_is_400(api, world):
    body = '{"agent_id": "support-bot", "project_id": "%s", "thread_id": "t\\ud800"}'
    response = api.generic(
        "POST",
        "/v1/runs",
        body % world.project.id,
        content_type="application/json",
        **world.app.headers,
    )
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation-error"
    assert "thread_id" in response.json()["details"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"\\ud800": 1, "type": "note", "content": "x"}', "non_field_errors"),
        ('{"type": "note", "content": {"list": ["ok", {"a\\u0000": 1}]}}', "content"),
        ('["x\\ud800"]', "non_field_errors"),
    ],
)
def test_hole_18_an_unstorable_key_or_item_is_refused_without_being_echoed(api, world, body, field):
    response = api.generic(
        "POST", "/v1/facts", body, content_type="application/json", **world.admin.headers
    )
    assert response.status_code == 400, response.content
    assert list(response.json()["details"]) == [field]
    assert b"\\ud800" not in response.content
    assert b"\\u0000" not in response.content
    assert not Fact.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/v1/facts/%00",
        f"/v1/facts/{uuid.UUID(int=1)}%00",
        "/v1/facts/a%00b/revisions",
        "/v1/approvals/%00/approve",
        "/v1/erasures/%00",
    ],
)
def test_hole_18_nul_in_a_path_id_is_404(api, world, path):
    method = "post" if path.endswith("approve") else "get"
    response = getattr(api, method)(path, **world.admin.headers)
    assert response.status_code == 404, response.content
    assert set(response.json()) == {"code", "message", "details"}
    assert response.json()["code"] == "not-found"


def test_hole_18_nul_in_a_conversation_id_is_404_and_writes_nothing(api, world):
    run = factories.run_create(world.app, world.project, participant_id="p-1", thread_id="c-1")
    response = api.post(
        "/v1/conversations/c%00/messages",
        {"messages": [{"role": "user", "text": "hello"}]},
        format="json",
        **run.headers,
    )
    assert response.status_code == 404, response.content
    assert response.json()["code"] == "not-found"
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("query", ["type=a%00b", "participant_id=%00", "tag%00=x"])
def test_hole_18_nul_in_a_query_parameter_is_400(api, world, query):
    response = api.get(f"/v1/facts?{query}", **world.admin.headers)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation-error"


def _cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode()


CRAFTED_CURSORS = [
    # parses, but leaves datetime's range once the offset is applied
    _cursor(f"0001-01-01T00:00:00+23:59|{uuid.UUID(int=1)}"),
    _cursor(f"9999-12-31T23:59:59-23:59|{uuid.UUID(int=1)}"),
    # a datetime PostgreSQL would take but no cursor of ours looks like
    _cursor(f"2026-01-01T00:00:00|{uuid.UUID(int=1)}"),
    _cursor("2026-01-01T00:00:00+00:00|not-a-uuid"),
    _cursor("2026-01-01T00:00:00+00:00"),
    _cursor(f"2026-01-01T00:00:00+00:00|{uuid.UUID(int=1)}|extra"),
    _cursor("2026-01-01T00:00:00+00:00|\x00"),
    "not base64!",
    base64.urlsafe_b64encode(b"\xff\xfe|x").decode(),
]


@pytest.mark.parametrize("path", ["/v1/facts", "/v1/approvals"])
@pytest.mark.parametrize("cursor", CRAFTED_CURSORS)
def test_hole_18_a_crafted_cursor_is_400(api, world, path, cursor):
    response = api.get(path, {"cursor": cursor}, **world.admin.headers)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation-error"
    assert "cursor" in response.json()["details"]


def test_hole_18_the_schema_documents_the_web_servers_refusals_in_the_error_shape(api, db):
    paths = api.get("/v1/schema", HTTP_ACCEPT="application/json").json()["paths"]
    for operation in (paths["/v1/facts"]["get"], paths["/v1/runs"]["post"]):
        for status in ("414", "431"):
            content = operation["responses"][status]["content"]
            assert content == {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
            }


def test_every_input_refuses_a_field_it_does_not_know_naming_it(api, world):
    # given: a run of the world's app, and the routes that silently dropped unknown fields
    from audit.models import AuditEvent
    from runlog.models import LogEntry

    run = factories.run_create(world.app, world.project, participant_id="p-1", thread_id="t-1")
    log = f"/v1/runs/{run.run.id}/log"
    selection = {"agent_id": world.agent.agent_id}
    calls = [  # (method, path, credential, body or query, the unknown field)
        ("post", "/v1/recall", run, {"selections": [selection], "mode": "list", "topk": 3}, "topk"),
        (
            "post",
            "/v1/recall",
            run,
            {"selections": [{**selection, "agnt": 1}], "mode": "list"},
            "agnt",
        ),
        ("post", log, run, {"kind": "turn", "payload": {}, "kindd": "x"}, "kindd"),
        ("get", log, run, {"limit": 5, "since": 3}, "since"),
        ("get", "/v1/audit", world.admin, {"limit": 5, "sinse_seq": 3}, "sinse_seq"),
        ("post", "/v1/runs", world.app, {"agent_id": "support-bot", "projet_id": "x"}, "projet_id"),
    ]
    for method, path, credential, body, field in calls:
        # when: a request carries a field its route does not declare
        if method == "post":
            response = api.post(path, body, format="json", **credential.headers)
        else:
            response = api.get(path, body, **credential.headers)
        # then: 400 in the error shape, naming the field
        assert response.status_code == 400, (path, body, response.content)
        answer = response.json()
        assert answer["code"] == "validation-error"
        details = answer["details"]
        if field == "agnt":  # inside the first selection
            details = details["selections"]["0"]
        assert details[field] == ["Unknown field."], (path, answer)
    # and nothing was written: no log entry, no second run, no successful event
    assert not LogEntry.objects.exists()
    assert Run.objects.count() == 1
    assert not AuditEvent.objects.filter(outcome="success").exists()
