"""`GET /v1/capabilities`: an agent learns what answers before it calls (seed 003's capability
probe), and the probe says what the routes themselves would decide."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from kindmem import services as kindmem_services
from tests import factories


def _probe(api, headers):
    response = api.get("/v1/capabilities", **headers)
    assert response.status_code == 200, response.content
    return response.json()


def test_without_an_embedder_semantic_modes_are_listed_as_unavailable(api, world, settings):
    settings.EMBEDDER = "none"
    body = _probe(api, world.app.headers)
    assert body["supports_semantic_recall"] is False
    assert body["facts"]["modes"] == ["keyword"]
    assert body["facts"]["unavailable_modes"] == {
        "semantic": "embedding-unavailable",
        "hybrid": "embedding-unavailable",
    }
    assert body["recall"]["modes"] == ["list", "keyword"]
    assert body["embedder"]["available"] is False
    assert "KINDMEM_EMBEDDER" in body["embedder"]["error"]
    # and the probe tells the truth: the route it says is unavailable answers so
    refused = api.post(
        "/v1/facts/search", {"query": "x", "mode": "semantic"}, format="json", **world.app.headers
    )
    assert refused.status_code == 503
    assert refused.json()["code"] == "embedding-unavailable"


def test_with_an_embedder_every_mode_answers(api, world, settings):
    settings.EMBEDDER = "hashing"
    body = _probe(api, world.app.headers)
    assert body["supports_semantic_recall"] is True
    assert body["facts"]["modes"] == ["keyword", "semantic", "hybrid"]
    assert body["facts"]["unavailable_modes"] == {}
    assert body["embedder"] == {
        "available": True,
        "provider": "hashing",
        "model": "kindmem-hashing-v1",
        "dimensions": 384,
        "runtime": None,
        "error": None,
    }
    assert set(body["rerankers"]) == set(settings.RERANKERS_KNOWN)
    assert body["supports_link_traversal"] is True
    assert (body["merge_patch"], body["import_files"]) == (True, True)


def _route_answers(api, headers, method, path, body=None):
    call = getattr(api, method)
    response = (
        call(path, body, format="json", **headers) if body is not None else call(path, **headers)
    )
    return response.status_code != 403


@pytest.mark.parametrize("who", ["admin", "app", "user", "reviewer", "privacy officer", "run"])
def test_each_operation_is_what_its_route_decides_for_that_credential(api, world, who):
    # given every kind of credential
    if who in {"reviewer", "privacy officer"}:
        group = "reviewer" if who == "reviewer" else "privacy-officer"
        world.user.groups.add(Group.objects.get_or_create(name=group)[0])
    headers = {
        "admin": world.admin.headers,
        "app": world.app.headers,
        "user": world.user_key.headers,
        "reviewer": world.user_key.headers,
        "privacy officer": world.user_key.headers,
        "run": factories.run_create(world.app, world.project).headers,
    }[who]
    operations = _probe(api, headers)["operations"]
    # then each operation the probe allows is one its route does not refuse with 403, and each
    # it refuses is one the route refuses
    routes = {
        "review": ("get", "/v1/approvals", None),
        "erasure": ("get", "/v1/erasures", None),
        "subject_access": ("get", "/v1/subject-access-requests", None),
        "audit": ("get", "/v1/audit", None),
        "remember": ("post", "/v1/remember", {}),
        "mint_runs": ("post", "/v1/runs", {}),
        "facts": ("get", "/v1/facts", None),
    }
    for name, (method, path, body) in routes.items():
        assert operations[name] == _route_answers(api, headers, method, path, body), (who, name)
    expected_true = {
        "admin": {"review", "erasure", "subject_access", "audit"},
        "app": {"mint_runs"},
        "user": {"mint_runs"},
        "reviewer": {"review", "mint_runs"},
        "privacy officer": {"erasure", "subject_access", "mint_runs"},
        "run": {"remember"},
    }[who]
    assert {n for n in routes if operations[n]} - {"facts"} == expected_true


def test_a_made_up_or_revoked_credential_gets_401_and_no_capabilities(api, world):
    assert api.get("/v1/capabilities").status_code == 401
    made_up = api.get("/v1/capabilities", HTTP_AUTHORIZATION="Bearer kmk_not-a-key")
    assert made_up.status_code == 401
    assert made_up.json()["code"] == "unauthenticated"
    kindmem_services.api_key_revoke(key=world.app.key)
    revoked = api.get("/v1/capabilities", **world.app.headers)
    assert revoked.status_code == 401
