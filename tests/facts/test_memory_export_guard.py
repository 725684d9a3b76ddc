"""`GET /v1/facts/export` reads through the reader guard as `GET /v1/facts` does: for generated
facts (scopes, record states, erasure holds) and every kind of credential, the export holds
exactly the facts, at exactly the revisions, that the list returns, filters included."""

from __future__ import annotations

import io
import os
import uuid
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from facts.memory_files import parse_memory_file
from facts.models import Fact, Revision, Subject
from kindmem.models import ErasureHold
from tests import factories

pytestmark = pytest.mark.django_db

PARTICIPANTS = ["a", "b"]
THREADS = ["t1", "t2"]
STATES = ["live", "superseded", "deleted", "pending", "rejected", "expired"]


class Rollback(Exception):
    pass


@pytest.fixture
def tenant_world(db: None) -> dict[str, Any]:
    """A tenant with two orgs of one project each, members, and a credential of every kind."""
    tenant = factories.tenant_create()
    orgs = [factories.org_create(tenant) for _ in range(2)]
    projects = [factories.project_create(tenant, org) for org in orgs]
    member = factories.user_create(tenant, projects=[projects[0]])
    org_member = factories.user_create(tenant, orgs=[orgs[1]])
    app = factories.app_key_create(tenant, [projects[0]])
    both = factories.app_key_create(tenant, projects)
    factories.agent_create(tenant)
    credentials = {
        "admin": factories.admin_key_create(tenant),
        "app p0": app,
        "app p0 p1": both,
        "user p0": factories.user_key_create(member),
        "user org1": factories.user_key_create(org_member),
        "run a t1": factories.run_create(app, projects[0], participant_id="a", thread_id="t1"),
        "run b": factories.run_create(both, projects[1], participant_id="b", thread_id=None),
        "run user": factories.run_create(app, projects[0], user=member, thread_id="t2"),
        "another tenant": factories.admin_key_create(factories.tenant_create()),
    }
    return {
        "tenant": tenant,
        "orgs": [str(o.id) for o in orgs],
        "projects": [str(p.id) for p in projects],
        "users": [str(member.id), str(org_member.id)],
        "credentials": credentials,
    }


def optional(values: list[str]) -> st.SearchStrategy[str | None]:
    """Mostly absent: a fact naming every container is readable by almost no one."""
    return st.sampled_from([None, None, None, *values])


@st.composite
def facts(draw: st.DrawFn, w: dict[str, Any]) -> dict[str, Any]:
    project = draw(optional(w["projects"]))
    scope = {
        "org_id": draw(optional(w["orgs"])),
        "project_id": project,
        "user_id": draw(optional(w["users"])),
        "participant_id": draw(optional(PARTICIPANTS)) if project else None,
        "thread_id": draw(optional(THREADS)),
    }
    return {
        "scope": scope,
        "type": draw(st.sampled_from(["note", "preference"])),
        "state": draw(st.sampled_from(STATES)),
        "subject": draw(optional(PARTICIPANTS)),
    }


def _plant(w: dict[str, Any], drawn: list[dict[str, Any]], held: set[str]) -> None:
    tenant = w["tenant"]
    now = timezone.now()
    made = Fact.objects.bulk_create(
        Fact(tenant=tenant, type=f["type"], **f["scope"]) for f in drawn
    )
    revisions = []
    for fact, f in zip(made, drawn, strict=True):
        state = f["state"]

        def revision(
            version: int, fact: Fact = fact, state: str = state, **fields: Any
        ) -> Revision:
            return Revision(
                tenant=tenant,
                fact=fact,
                version=version,
                content=f"{state} v{version}",
                content_hash=f"{fact.id}-{version}",
                attributed_kind="service",
                attributed_id="t",
                **fields,
            )

        ended = {"invalidated_at": now, "invalidation_reason": "superseded"}
        if state == "superseded":
            revisions += [revision(1, **ended), revision(2)]
        elif state == "deleted":
            revisions.append(revision(1, invalidated_at=now, invalidation_reason="deleted"))
        elif state == "pending":
            revisions += [revision(1, review="pending")]
        elif state == "rejected":
            revisions += [
                revision(1),
                revision(2, review="pending", invalidated_at=now, invalidation_reason="deleted"),
            ]
        elif state == "expired":
            revisions.append(revision(1, expires_at=now - timedelta(seconds=1)))
        else:
            revisions.append(revision(1))
    Revision.objects.bulk_create(revisions)
    Subject.objects.bulk_create(
        Subject(
            tenant=tenant,
            revision=r,
            fact_id=r.fact_id,
            kind="participant",
            subject_id=f["subject"],
        )
        for r in revisions
        for fact, f in zip(made, drawn, strict=True)
        if r.fact_id == fact.id and f["subject"]
    )
    ErasureHold.objects.bulk_create(
        ErasureHold(
            tenant=tenant, subject_kind="participant", subject_id=p, erasure_id=uuid.uuid4()
        )
        for p in held
    )


def _listed(api: Any, headers: dict[str, str], params: dict[str, str]) -> dict[str, str]:
    response = api.get("/v1/facts", {**params, "limit": 200}, **headers)
    assert response.status_code == 200, response.content
    assert response.json()["next_cursor"] is None
    return {f["id"]: f["revision_id"] for f in response.json()["facts"]}


def _exported(api: Any, headers: dict[str, str], params: dict[str, str]) -> dict[str, str]:
    response = api.get("/v1/facts/export", params, **headers)
    assert response.status_code == 200, response.content
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    out = {}
    for name in archive.namelist():
        stem = name.removeprefix("facts/").removesuffix(".md")
        envelope = parse_memory_file(archive.read(name).decode(), stem=stem).envelope
        out[stem] = envelope["provenance"]["kindmem"]["revision"]["id"]
    return out


compared: list[int] = []


@settings(
    max_examples=int(os.environ.get("KINDMEM_EXPORT_GUARD_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_export_holds_exactly_what_the_list_returns_for_every_credential(
    api: Any, tenant_world: dict[str, Any], data: st.DataObject
) -> None:
    w = tenant_world
    drawn = data.draw(st.lists(facts(w), min_size=1, max_size=12))
    held = data.draw(st.frozensets(st.sampled_from(PARTICIPANTS), max_size=1))
    filters = data.draw(
        st.sampled_from(
            [
                {},
                {"type": "note"},
                {"project_id": w["projects"][0]},
                {"participant_id": "a"},
                {"thread_id": "t1", "type": "preference"},
            ]
        )
    )
    try:
        with transaction.atomic():
            # given generated facts in every record state, and perhaps a hold on a person
            _plant(w, drawn, set(held))
            for name, credential in w["credentials"].items():
                # when each credential lists and exports, with the same filters
                listed = _listed(api, credential.headers, filters)
                exported = _exported(api, credential.headers, filters)
                # then the export holds the same facts, at the same revisions
                assert exported == listed, (name, filters)
                compared.append(len(listed))
            raise Rollback
    except Rollback:
        pass


def test_the_property_compared_many_readable_facts():
    """Not vacuous: many of the (example, credential) comparisons had facts to compare."""
    assert sum(compared) >= 50
    assert len([n for n in compared if n]) >= len(compared) // 8
