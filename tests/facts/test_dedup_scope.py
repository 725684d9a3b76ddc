"""Dedup as seed 003 defines it, per type (`DedupScope`): `content` collapses identical content
anywhere in the scope, under any key; `entity` only a keyed slot's repeat (two keyless writes
are two records); kindmem's default for last-write-wins, `slot`, collapses identical content in
the same slot; a bounded ring defaults to `entity`."""

from __future__ import annotations

import pytest

from facts.models import DedupScope, Fact, WritePolicy, WritePolicyKind
from tests.facts.conftest import create

pytestmark = pytest.mark.django_db


def _outcomes(api, world, writes):
    """Each write's outcome and fact id, in order."""
    out = []
    for key, text in writes:
        response = create(api, world.admin, type="note", content={"text": text}, key=key)
        assert response.status_code in {200, 201}, response.json()
        out.append((response.json()["outcome"], response.json()["fact"]["id"]))
    return out


WRITES = [(None, "same"), (None, "same"), ("a", "same"), ("b", "same"), ("a", "same")]


@pytest.mark.parametrize(
    ("policy", "expected_facts", "outcomes"),
    [
        # no policy: kindmem's `slot` (equal content in one slot is one fact; keys stay apart)
        (None, 3, ["created", "unchanged", "created", "created", "unchanged"]),
        (
            {"dedup_scope": DedupScope.SLOT},
            3,
            ["created", "unchanged", "created", "created", "unchanged"],
        ),
        # seed 003's `content`: one fact for the same content anywhere in the scope
        (
            {"dedup_scope": DedupScope.CONTENT},
            1,
            ["created", "unchanged", "unchanged", "unchanged", "unchanged"],
        ),
        # seed 003's `entity` (its default): keyless writes never collapse
        (
            {"dedup_scope": DedupScope.ENTITY},
            4,
            ["created", "created", "created", "created", "unchanged"],
        ),
        # a bounded ring without a dedup scope: `entity`
        (
            {"policy": WritePolicyKind.CAP_CULL, "max_records": 100},
            4,
            ["created", "created", "created", "created", "unchanged"],
        ),
    ],
)
def test_each_dedup_scope_collapses_what_the_seed_says(
    api, world, policy, expected_facts, outcomes
) -> None:
    if policy is not None:
        WritePolicy.objects.create(tenant=world.tenant, fact_type="note", **policy)
    written = _outcomes(api, world, WRITES)
    assert [o for o, _ in written] == outcomes
    assert Fact.objects.filter(type="note").count() == expected_facts
    # an unchanged write answers a fact written before it, never a new one
    created = [fact_id for outcome, fact_id in written if outcome == "created"]
    assert len(set(created)) == len(created)
    assert {f for o, f in written if o == "unchanged"} <= set(created)


def test_content_dedup_never_crosses_scopes_or_types(api, world) -> None:
    WritePolicy.objects.create(tenant=world.tenant, fact_type="note", dedup_scope="content")
    a = create(api, world.admin, type="note", content={"text": "x"}).json()
    in_project = create(
        api,
        world.admin,
        type="note",
        content={"text": "x"},
        scope={"project_id": str(world.project.id)},
    ).json()
    other_type = create(api, world.admin, type="memo", content={"text": "x"}).json()
    assert [a["outcome"], in_project["outcome"], other_type["outcome"]] == ["created"] * 3
