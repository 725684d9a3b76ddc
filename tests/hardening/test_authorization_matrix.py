"""Every route and method, called by every kind of principal, against one declared table.

The routes come from Django's resolver, so a new endpoint that is missing from `EXPECTED`
fails `test_every_route_and_method_is_in_the_table`. Each cell runs in its own savepoint
against a fresh world, so one principal's write never changes another's answer.
Run with KINDMEM_MATRIX_PRINT=1 to print the observed table (to review, never to paste blind).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from approvals.remember import memory_remember
from facts.links import link_create
from facts.services import fact_create
from privacy import exports as privacy_exports
from privacy import services as privacy_services
from recall import services as recall_services
from runlog.services import log_append
from tests import factories
from webhooks import services as webhook_services

PRINCIPALS = ["admin", "user", "app", "run", "reviewer", "privacy", "none", "other"]
METHODS = ("get", "post", "put", "patch", "delete")


def api_routes() -> Iterator[tuple[str, str]]:
    """(route, method) for every /v1 route and /healthz, from the resolver itself."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    for route, pattern in walk(get_resolver().url_patterns, ""):
        if not (route.startswith("v1/") or route == "healthz"):
            continue
        view = getattr(pattern.callback, "cls", None)
        methods = [m for m in METHODS if view is not None and hasattr(view, m)] or ["get"]
        for method in methods:
            yield route, method


@dataclass
class MatrixWorld:
    credentials: dict[str, dict[str, str]]
    fact_id: str
    other_fact_id: str
    run_id: str
    conversation_id: str
    project_id: str
    approval_id: str
    erasure_id: str
    access_request_id: str
    download_token: str
    link_id: str
    webhook_id: str


def build_world() -> MatrixWorld:
    tenant = factories.tenant_create()
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org)
    agent = factories.agent_create(tenant)
    agent.memory_declarations = [
        {"type": "preference", "scope": "participant", "keep_days": 30},
        {"type": "insight", "scope": "same-project", "keep_days": 30},
    ]
    agent.save()
    user = factories.user_create(tenant, projects=[project], orgs=[org])
    reviewer = factories.user_create(tenant, projects=[project], orgs=[org])
    reviewer.groups.add(Group.objects.get(name="reviewer"))
    officer = factories.user_create(tenant, projects=[project], orgs=[org])
    officer.groups.add(Group.objects.get(name="privacy-officer"))
    app = factories.app_key_create(tenant, [project])
    run = factories.run_create(app, project, participant_id="p-1", thread_id="c-1")
    scope = {"project_id": project.id, "participant_id": "p-1"}
    fact = fact_create(principal=app.principal, type="note", content={"text": "a"}, scope=scope)
    other = fact_create(principal=app.principal, type="note", content={"text": "b"}, scope=scope)
    link, _ = link_create(
        principal=app.principal,
        source_id=fact.revision.fact_id,
        target_id=other.revision.fact_id,
        type="about",  # the links route's own call links them "related"
    )
    recall_services.conversation_append(
        principal=run.principal,
        conversation_id="c-1",
        messages=[recall_services.NewMessage("user", "hello")],
        start=recall_services.ConversationStart(),
    )
    log_append(principal=run.principal, run=run.run, kind="turn", payload={"text": "hi"})
    pending = memory_remember(
        principal=run.principal, type="insight", text="customers ask for refunds", tool_call_id="t1"
    )
    assert pending.approval is not None
    erasure = privacy_services.erasure_start(
        tenant_id=tenant.id,
        target_kind="participant",
        target_id="p-gone",
        reason="asked",
        requested_by="matrix",
    )
    actor = privacy_services.Actor.of_principal(app.principal)
    access = privacy_services.access_request_start(
        actor=actor, subject_kind="participant", subject_id="p-1"
    )
    privacy_exports.access_export_build(access_request_id=access.id)
    access.refresh_from_db()
    elsewhere = factories.tenant_create()
    # a public address, given as one (registering resolves the host and connects nowhere)
    endpoint = webhook_services.endpoint_register(
        tenant_id=tenant.id, url="https://1.1.1.1/hook", events=["fact.changed"]
    )
    return MatrixWorld(
        credentials={
            "admin": factories.admin_key_create(tenant).headers,
            "user": factories.user_key_create(user).headers,
            "app": app.headers,
            "run": run.headers,
            "reviewer": factories.user_key_create(reviewer).headers,
            "privacy": factories.user_key_create(officer).headers,
            "none": {},
            "other": factories.admin_key_create(elsewhere).headers,
        },
        fact_id=str(fact.revision.fact_id),
        other_fact_id=str(other.revision.fact_id),
        run_id=str(run.run.id),
        conversation_id="c-1",
        project_id=str(project.id),
        approval_id=str(pending.approval.id),
        erasure_id=str(erasure.id),
        access_request_id=str(access.id),
        download_token=privacy_services.access_export_token(request=access),
        link_id=str(link.id),
        webhook_id=str(endpoint.id),
    )


# How each route is called: its URL and, for writes, a valid body.
Call = Callable[[MatrixWorld], tuple[str, dict[str, Any] | None]]
CALLS: dict[tuple[str, str], Call] = {
    ("healthz", "get"): lambda w: ("/healthz", None),
    ("v1/me", "get"): lambda w: ("/v1/me", None),
    ("v1/capabilities", "get"): lambda w: ("/v1/capabilities", None),
    ("v1/facts/<str:fact_id>", "patch"): lambda w: (
        f"/v1/facts/{w.fact_id}",
        {"content": {"text": "patched"}},
    ),
    ("v1/facts/<str:fact_id>/links/<str:link_id>", "patch"): lambda w: (
        f"/v1/facts/{w.fact_id}/links/{w.link_id}",
        {"confidence": 0.5},
    ),
    ("v1/facts/<str:fact_id>/links/<str:link_id>", "delete"): lambda w: (
        f"/v1/facts/{w.fact_id}/links/{w.link_id}",
        None,
    ),
    ("v1/runs", "post"): lambda w: (
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": w.project_id},
    ),
    ("v1/schema", "get"): lambda w: ("/v1/schema", None),
    ("v1/docs", "get"): lambda w: ("/v1/docs", None),
    ("v1/facts", "get"): lambda w: ("/v1/facts", None),
    ("v1/facts", "post"): lambda w: (
        "/v1/facts",
        {
            "type": "note",
            "content": {"text": "new"},
            "scope": {"project_id": w.project_id, "participant_id": "p-1"},
        },
    ),
    ("v1/facts/<str:fact_id>", "get"): lambda w: (f"/v1/facts/{w.fact_id}", None),
    ("v1/facts/export", "get"): lambda w: ("/v1/facts/export", None),
    ("v1/facts/import", "post"): lambda w: ("/v1/facts/import", _memory_file(w)),
    ("v1/facts/<str:fact_id>", "delete"): lambda w: (f"/v1/facts/{w.fact_id}", None),
    ("v1/facts/<str:fact_id>/revisions", "get"): lambda w: (
        f"/v1/facts/{w.fact_id}/revisions",
        None,
    ),
    ("v1/facts/<str:fact_id>/supersede", "post"): lambda w: (
        f"/v1/facts/{w.fact_id}/supersede",
        {"content": {"text": "next"}},
    ),
    ("v1/facts/<str:fact_id>/verify", "post"): lambda w: (f"/v1/facts/{w.fact_id}/verify", {}),
    ("v1/facts/<str:fact_id>/links", "get"): lambda w: (f"/v1/facts/{w.fact_id}/links", None),
    ("v1/facts/<str:fact_id>/links", "post"): lambda w: (
        f"/v1/facts/{w.fact_id}/links",
        {"target": w.other_fact_id, "type": "related"},
    ),
    ("v1/conversations/<str:conversation_id>/messages", "get"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/messages",
        None,
    ),
    ("v1/conversations/<str:conversation_id>/messages", "delete"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/messages",
        None,
    ),
    ("v1/conversations/<str:conversation_id>/messages/<int:sequence>", "delete"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/messages/1",
        None,
    ),
    ("v1/conversations/<str:conversation_id>/messages", "post"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/messages",
        {"messages": [{"role": "user", "text": "again"}]},
    ),
    ("v1/conversations/<str:conversation_id>/extract", "post"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/extract",
        {},
    ),
    ("v1/conversations/<str:conversation_id>/extract", "get"): lambda w: (
        f"/v1/conversations/{w.conversation_id}/extract",
        None,
    ),
    ("v1/recall", "post"): lambda w: (
        "/v1/recall",
        {"selections": [{"agent_id": "support-bot"}], "mode": "list"},
    ),
    ("v1/runs/<uuid:run_id>/log", "get"): lambda w: (f"/v1/runs/{w.run_id}/log", None),
    ("v1/runs/<uuid:run_id>/log", "post"): lambda w: (
        f"/v1/runs/{w.run_id}/log",
        {"kind": "note", "payload": {"text": "x"}},
    ),
    ("v1/runs/<uuid:run_id>/log/verify", "get"): lambda w: (
        f"/v1/runs/{w.run_id}/log/verify",
        None,
    ),
    ("v1/audit", "get"): lambda w: ("/v1/audit", None),
    ("v1/webhooks", "get"): lambda w: ("/v1/webhooks", None),
    ("v1/webhooks", "post"): lambda w: (
        "/v1/webhooks",
        {"url": "https://1.1.1.1/other", "events": ["approval.pending"]},
    ),
    ("v1/webhooks/<str:endpoint_id>", "delete"): lambda w: (
        f"/v1/webhooks/{w.webhook_id}",
        None,
    ),
    ("v1/facts/search", "post"): lambda w: (
        "/v1/facts/search",
        {"mode": "keyword", "query": "a", "top_k": 5},
    ),
    ("v1/remember", "post"): lambda w: (
        "/v1/remember",
        {"type": "preference", "text": "prefers email", "tool_call_id": "t2"},
    ),
    ("v1/approvals", "get"): lambda w: ("/v1/approvals", None),
    ("v1/approvals/<str:approval_id>/approve", "post"): lambda w: (
        f"/v1/approvals/{w.approval_id}/approve",
        {},
    ),
    ("v1/approvals/<str:approval_id>/reject", "post"): lambda w: (
        f"/v1/approvals/{w.approval_id}/reject",
        {"note": "not true"},
    ),
    ("v1/approvals/<str:approval_id>/verify", "post"): lambda w: (
        f"/v1/approvals/{w.approval_id}/verify",
        {},
    ),
    ("v1/erasures", "post"): lambda w: (
        "/v1/erasures",
        {"target_kind": "participant", "target_id": "p-2", "reason": "the person asked"},
    ),
    ("v1/erasures?dry_run=true", "post"): lambda w: (
        "/v1/erasures?dry_run=true",
        {"target_kind": "participant", "target_id": "p-1"},
    ),
    ("v1/erasures/<str:erasure_id>", "get"): lambda w: (f"/v1/erasures/{w.erasure_id}", None),
    ("v1/subject-access-requests", "post"): lambda w: (
        "/v1/subject-access-requests",
        {"subject_kind": "participant", "subject_id": "p-1"},
    ),
    ("v1/subject-access-requests/<str:request_id>", "get"): lambda w: (
        f"/v1/subject-access-requests/{w.access_request_id}",
        None,
    ),
    ("v1/subject-access-requests/<str:request_id>/download", "get"): lambda w: (
        f"/v1/subject-access-requests/{w.access_request_id}/download"
        f"?export=json&token={w.download_token}",
        None,
    ),
}


def _memory_file(w: MatrixWorld) -> str:
    """A memory file of a fact about p-1 (`POST /v1/facts/import`'s body, as text)."""
    from facts.memory_files import FORMAT, serialize_memory_file

    scope = {"project_id": w.project_id, "participant_id": "p-1"}
    envelope = {
        "id": "imported-1",
        "entityId": "imported-1",
        "kind": "note",
        "tags": [],
        "links": [{"type": "about", "target": "not-in-the-import"}],
        "created": 1,
        "updated": 1,
        "seq": 1,
        "contentHash": "",
        "provenance": {
            "source": "human",
            "kindmem": {"format": FORMAT, "body": "text", "scope": scope},
        },
    }
    return serialize_memory_file(envelope, "imported through the matrix")


# Routes whose body is not plain JSON (a text body is sent as it is).
MEDIA_TYPES = {
    ("v1/facts/<str:fact_id>", "patch"): "application/merge-patch+json",
    ("v1/facts/import", "post"): "text/markdown",
}

# Routes whose query parameter changes what they do, called as a row of their own.
VARIANTS = [("v1/erasures?dry_run=true", "post")]

#                              admin user app  run  revw priv none other
EXPECTED: dict[tuple[str, str], list[int]] = {}


def expect(route: str, method: str, statuses: list[int]) -> None:
    assert len(statuses) == len(PRINCIPALS)
    EXPECTED[(route, method)] = statuses


# fmt: off
expect("healthz", "get",                                   [200, 200, 200, 200, 200, 200, 200, 200])
expect("v1/me", "get",                                     [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/capabilities", "get",                           [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/facts/<str:fact_id>", "patch",                  [201, 404, 201, 201, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/links/<str:link_id>", "patch",
                                                           [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/links/<str:link_id>", "delete",
                                                           [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/runs", "post",                                  [403, 201, 201, 403, 201, 201, 401, 403])
expect("v1/schema", "get",                                 [200, 200, 200, 200, 200, 200, 200, 200])
expect("v1/docs", "get",                                   [200, 200, 200, 200, 200, 200, 200, 200])
expect("v1/facts", "get",                                  [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/facts", "post",                                 [201, 403, 201, 201, 403, 403, 401, 400])
expect("v1/facts/<str:fact_id>", "get",                    [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/facts/export", "get",                           [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/facts/import", "post",                          [200, 403, 200, 200, 403, 403, 401, 400])
# a run never deletes what a person, an app or staff asserted (facts.authority.check_run_may_delete)
expect("v1/facts/<str:fact_id>", "delete",                 [200, 404, 200, 403, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/revisions", "get",          [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/supersede", "post",         [201, 404, 201, 201, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/verify", "post",            [201, 404, 403, 403, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/links", "get",              [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/facts/<str:fact_id>/links", "post",             [201, 404, 201, 201, 404, 404, 401, 404])
expect("v1/conversations/<str:conversation_id>/messages", "get",
                                                           [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/conversations/<str:conversation_id>/messages", "post",
                                                           [403, 403, 201, 201, 403, 403, 401, 403])
expect("v1/conversations/<str:conversation_id>/messages", "delete",
                                                           [403, 404, 200, 200, 404, 404, 401, 404])
expect("v1/conversations/<str:conversation_id>/messages/<int:sequence>", "delete",
                                                           [403, 404, 200, 200, 404, 404, 401, 404])
expect("v1/conversations/<str:conversation_id>/extract", "post",
                                                           [403, 403, 202, 202, 403, 403, 401, 403])
expect("v1/conversations/<str:conversation_id>/extract", "get",
                                                           [403, 403, 200, 200, 403, 403, 401, 403])
expect("v1/recall", "post",                                [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/runs/<uuid:run_id>/log", "get",                 [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/runs/<uuid:run_id>/log", "post",                [201, 404, 201, 201, 404, 404, 401, 404])
expect("v1/runs/<uuid:run_id>/log/verify", "get",          [200, 404, 200, 200, 404, 404, 401, 404])
expect("v1/audit", "get",                                  [200, 403, 403, 403, 403, 403, 401, 200])
expect("v1/webhooks", "get",                               [200, 403, 403, 403, 403, 403, 401, 200])
expect("v1/webhooks", "post",                              [201, 403, 403, 403, 403, 403, 401, 201])
expect("v1/webhooks/<str:endpoint_id>", "delete",          [204, 403, 403, 403, 403, 403, 401, 404])
expect("v1/facts/search", "post",                          [200, 200, 200, 200, 200, 200, 401, 200])
expect("v1/remember", "post",                              [403, 403, 403, 201, 403, 403, 401, 403])
expect("v1/approvals", "get",                              [200, 403, 403, 403, 200, 403, 401, 200])
expect("v1/approvals/<str:approval_id>/approve", "post",   [200, 403, 403, 403, 200, 403, 401, 404])
expect("v1/approvals/<str:approval_id>/reject", "post",    [200, 403, 403, 403, 200, 403, 401, 404])
expect("v1/approvals/<str:approval_id>/verify", "post",    [200, 403, 403, 403, 200, 403, 401, 404])
expect("v1/erasures", "post",                              [202, 403, 403, 403, 403, 202, 401, 202])
expect("v1/erasures?dry_run=true", "post",                 [200, 403, 403, 403, 403, 200, 401, 200])
expect("v1/erasures/<str:erasure_id>", "get",              [200, 403, 403, 403, 403, 200, 401, 404])
expect("v1/subject-access-requests", "post",               [202, 403, 403, 403, 403, 202, 401, 202])
expect("v1/subject-access-requests/<str:request_id>", "get",
                                                           [200, 403, 403, 403, 403, 200, 401, 404])
expect("v1/subject-access-requests/<str:request_id>/download", "get",
                                                           [200, 403, 403, 403, 403, 200, 401, 404])
# fmt: on


def test_every_route_and_method_is_in_the_table():
    missing = sorted(set(api_routes()) - set(EXPECTED))
    assert missing == [], f"add these routes to the authorization matrix: {missing}"
    assert set(CALLS) == set(EXPECTED)
    routes = set(api_routes())
    assert all((route.partition("?")[0], method) in routes for route, method in VARIANTS)


@pytest.mark.django_db
def test_every_principal_gets_the_declared_status_on_every_route(settings):
    # a chat model for extraction (only named: a request queues, the task never runs here)
    settings.LLM_URL, settings.LLM_MODEL = "http://127.0.0.1:1", "matrix-llm"
    observed: dict[tuple[str, str], list[int]] = {}
    for route, method in sorted({*api_routes(), *VARIANTS}):
        row = []
        for principal in PRINCIPALS:
            with transaction.atomic():
                world = build_world()
                url, body = CALLS[(route, method)](world)
                client = APIClient()
                kwargs: dict[str, Any] = {**world.credentials[principal]}
                if (route, method) in MEDIA_TYPES:
                    sent = body if isinstance(body, str) else json.dumps(body)
                    kwargs.update(data=sent, content_type=MEDIA_TYPES[route, method])
                elif body is not None:
                    kwargs.update(data=body, format="json")
                response = getattr(client, method)(url, **kwargs)
                row.append(response.status_code)
                assert response.status_code < 500, (route, method, principal)
                transaction.set_rollback(True)
        observed[(route, method)] = row
    if os.environ.get("KINDMEM_MATRIX_PRINT"):
        for (route, method), row in observed.items():
            print(f'expect("{route}", "{method}", {row})')
    mismatches = {
        key: {"expected": EXPECTED.get(key), "observed": row}
        for key, row in observed.items()
        if EXPECTED.get(key) != row
    }
    assert mismatches == {}
