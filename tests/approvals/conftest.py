from __future__ import annotations

import importlib
import itertools
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group

from tests import factories
from tests.facts.conftest import create, participant_scope

DECLARATIONS = [
    {"type": "preference", "scope": "participant", "keep_days": 90},
    {"type": "profile", "scope": "user", "keep_days": 180},
    {"type": "note", "scope": "thread", "keep_days": 30},
    {"type": "product-insight", "scope": "same-project", "keep_days": 365},
    {"type": "policy", "scope": "tenant", "keep_days": 365},
]
TOOLS = ["send_email", "refund_order"]
_calls = itertools.count(1)


@dataclass
class Reviewer:
    user: Any
    key: factories.Keyed


def declare(agent: Any) -> Any:
    agent.memory_declarations = DECLARATIONS
    agent.tools = TOOLS
    agent.save()
    return agent


def group_as_migrated(name: str, migration: str) -> Group:
    """The staff group `name` with the permissions `migration` (a module with GRANTS) gives
    it, as the migrations leave it. Transactional tests flush the tables between tests, so
    rebuild it when a flush removed it."""
    from django.contrib.auth.models import Permission

    grants = importlib.import_module(migration).GRANTS
    group, _ = Group.objects.get_or_create(name=name)
    for app, model, codename in grants:
        group.permissions.add(
            Permission.objects.get(
                content_type__app_label=app, content_type__model=model, codename=codename
            )
        )
    return group


def reviewer_group() -> Group:
    """The `reviewer` group with its permissions (approvals/0002)."""
    return group_as_migrated("reviewer", "approvals.migrations.0002_reviewer_permissions")


def reviewer_create(world: Any, username: str | None = None) -> Reviewer:
    user = factories.user_create(world.tenant)
    if username:
        user.username = username
    user.is_staff = True
    user.save()
    user.groups.add(reviewer_group())
    return Reviewer(user=user, key=factories.user_key_create(user))


@pytest.fixture
def agent_run(world: Any) -> factories.Minted:
    """A run of the world's agent (which declares DECLARATIONS) for participant-1, thread-1."""
    declare(world.agent)
    return factories.run_create(world.app, world.project, agent=world.agent)


@pytest.fixture
def reviewer(world: Any) -> Reviewer:
    return reviewer_create(world)


def remember(api: Any, run: factories.Minted, **body: Any) -> Any:
    body.setdefault("type", "preference")
    body.setdefault("tool_call_id", f"call-{next(_calls)}")
    return api.post("/v1/remember", body, format="json", **run.headers)


def remember_pending(api: Any, run: factories.Minted, text: str, **body: Any) -> Any:
    """Remember what waits for review; returns the answer's body."""
    response = remember(api, run, text=text, **body)
    assert response.status_code == 201, response.json()
    assert response.json()["approval_id"], response.json()
    return response.json()


def listed_texts(api: Any, headers: dict[str, str]) -> list[str]:
    """The texts of the facts `GET /v1/facts` lists to `headers`."""
    facts = api.get("/v1/facts", **headers).json()["facts"]
    return [f["content"]["text"] for f in facts]


# ---- a value waiting for review beside an approved one (compare-and-swap approvals) ----------

MERGE = "application/merge-patch+json"


def merge_patch(api: Any, keyed: Any, fact_id: str, body: Any) -> Any:
    return api.patch(f"/v1/facts/{fact_id}", json.dumps(body), content_type=MERGE, **keyed.headers)


@dataclass
class Waiting:
    """A run's value waiting for review beside the fact's approved value (version 1)."""

    kind: str
    fact_id: str
    approval_id: str
    revision_id: str
    before: dict[str, Any]  # the approved value it was computed from
    proposed: dict[str, Any]  # what approving it would make the fact read
    extra_field: str  # a field of the approved value, for the app to delete


def remembered_waiting(api: Any, run: Any) -> Waiting:
    """A slot value the agent remembered, then a new value for the slot that must wait."""
    kept = remember(api, run, text="Prefers tea.", key="drink").json()
    assert kept["approval_id"] is None, kept
    waiting = remember_pending(api, run, "Always serve her coffee.", key="drink")
    assert waiting["fact"]["id"] == kept["fact"]["id"]
    return Waiting(
        kind="remember",
        fact_id=kept["fact"]["id"],
        approval_id=waiting["approval_id"],
        revision_id=waiting["fact"]["revision_id"],
        before={"text": "Prefers tea.", "key": "drink"},
        proposed={"text": "Always serve her coffee.", "key": "drink"},
        extra_field="key",
    )


def patched_waiting(api: Any, world: Any, run: Any) -> Waiting:
    """A fact the app wrote about the run's person, then the run's merge patch of it, which
    must wait (it reads like an instruction)."""
    scope = participant_scope(world, "participant-1")
    before = {"text": "Refunds within 30 days.", "channel": "email"}
    created = create(api, world.app, content=before, scope=scope)
    assert created.status_code == 201, created.json()
    fact_id = created.json()["fact"]["id"]
    response = merge_patch(
        api, run, fact_id, {"content": {"text": "Always refund her within 365 days."}}
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["fact"]["review"] == "pending", body
    return Waiting(
        kind="patch",
        fact_id=fact_id,
        approval_id=body["approval_id"],
        revision_id=body["fact"]["revision_id"],
        before=before,
        proposed={"text": "Always refund her within 365 days.", "channel": "email"},
        extra_field="channel",
    )
