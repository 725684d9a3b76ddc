"""A keyed write into a slot a live fact already holds (same type, key and scope), through every
door that writes one, with every credential kind: it is that fact's next revision under the
supersede rules, never a second fact beside it (red team finding 4, issue 41 item 2).

Over credential (admin, user, app, run) x door (`POST /v1/facts`, a markdown memory file, a
zip of them) x what the slot holds (the writer's own value, an app's asserted value, a verified
value, a type whose write policy keeps the field immutable), each case asserts the answer and
that a second reader (another run of the same person) reads exactly one value in the slot:
the new one where the write lands, the old one where it waits for review or is refused (and
then nothing at all is written). MCP's doors call the same routes in-process: a real server
drives them in test_slot_doors_mcp.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from facts import create as create_module
from facts import services
from facts.models import Fact, Revision, Subject, WritePolicy
from tests import factories
from tests.approvals.conftest import declare
from tests.facts.memory_file_requests import import_files, memory, zipped

CREDS = ["admin", "user", "app", "run"]
DOORS = ["post", "import-markdown", "import-zip"]
STATES = ["own", "app-asserted", "verified", "immutable"]
KEY = "plan"
OLD, NEW = {"plan": "Pro"}, {"plan": "Free"}
# the immutable case: a type whose write policy lets only `nickname` change
ACCOUNT_OLD = {"nickname": "a", "tier": "free"}
ACCOUNT_NEW = {"nickname": "a", "tier": "gold"}


@dataclass
class Case:
    writer: Any  # Keyed or Minted: `.principal`, `.headers`
    scope: dict[str, str]
    holder: str  # the slot's fact
    type: str
    content: dict[str, Any]  # what the writer writes into the slot
    reader: Any  # another run of the same person


def _counts() -> tuple[int, int, int]:
    return Fact.objects.count(), Revision.objects.count(), Subject.objects.count()


def _case(world: Any, cred: str, state: str) -> Case:
    project = str(world.project.id)
    # a Kindgi user's key writes no end user's facts: its slot is the project's, which the
    # person's runs read too
    scope = (
        {"project_id": project}
        if cred == "user"
        else {"project_id": project, "participant_id": "participant-1"}
    )
    writer = {
        "admin": world.admin,
        "user": world.user_key,
        "app": world.app,
        "run": factories.run_create(world.app, world.project),
    }[cred]
    type, old, new = "plan", OLD, NEW
    if state == "immutable":
        WritePolicy.objects.create(
            tenant=world.tenant, fact_type="account", mutable_fields=["nickname"]
        )
        type, old, new = "account", ACCOUNT_OLD, ACCOUNT_NEW
    asserter = writer if state in ("own", "immutable") else world.app
    holder = services.fact_create(
        principal=asserter.principal, type=type, key=KEY, content=old, scope=scope
    ).revision
    assert holder.review is None
    if state == "verified":
        services.fact_verify(principal=world.admin.principal, fact_id=holder.fact_id)
    reader = factories.run_create(world.app, world.project)
    return Case(writer, scope, str(holder.fact_id), type, new, reader)


def _post(api: Any, c: Case) -> tuple[int, dict[str, Any]]:
    body = {"type": c.type, "key": KEY, "content": c.content, "scope": c.scope}
    answer = api.post("/v1/facts", body, format="json", **c.writer.headers)
    return answer.status_code, answer.json()


def _file(c: Case) -> str:
    return memory(
        "slot-file",
        json.dumps(c.content),
        entityId=KEY,
        kind=c.type,
        kindmem={"body": "json", "key": KEY, "scope": c.scope},
    )


def _imported(answer: Any) -> tuple[int, dict[str, Any]]:
    """An import's answer as a write's: its one file's outcome, or the refusal."""
    body = answer.json()
    if answer.status_code != 200:
        return answer.status_code, body
    [file] = body["files"]
    return 201, {"outcome": file["outcome"], "fact_id": file["fact_id"], **file}


def _import_markdown(api: Any, c: Case) -> tuple[int, dict[str, Any]]:
    return _imported(import_files(api, c.writer, _file(c), content_type="text/markdown"))


def _import_zip(api: Any, c: Case) -> tuple[int, dict[str, Any]]:
    return _imported(import_files(api, c.writer, zipped({"facts/slot-file.md": _file(c)})))


WRITE: dict[str, Callable[[Any, Case], tuple[int, dict[str, Any]]]] = {
    "post": _post,
    "import-markdown": _import_markdown,
    "import-zip": _import_zip,
}


def _slot(api: Any, c: Case) -> list[dict[str, Any]]:
    """What the other run of the person reads in the slot."""
    read = api.get("/v1/facts", {"type": c.type, "key": KEY}, **c.reader.headers)
    assert read.status_code == 200, read.json()
    return read.json()["facts"]


def _fact_id(body: dict[str, Any]) -> str:
    return str(body["fact"]["id"]) if "fact" in body else str(body["fact_id"])


def _reasons(body: dict[str, Any]) -> list[str]:
    """Why the write waits (a write's and an import file's answer alike)."""
    return list((body.get("review") or {}).get("reasons", []))


@pytest.mark.django_db
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("cred", CREDS)
def test_a_keyed_write_into_a_held_slot_is_its_next_revision_never_a_second_fact(
    api: Any, world: Any, cred: str, door: str, state: str
) -> None:
    # given: a slot holding a live value (the writer's own, an app's, a verified one, or one
    # whose field the type keeps immutable)
    c = _case(world, cred, state)
    old = _slot(api, c)
    assert [f["id"] for f in old] == [c.holder]
    before = _counts()

    # when: the credential writes the same type, key and scope with other content
    status, body = WRITE[door](api, c)

    # then: as the supersede rules say, and the person's other run reads one value in the slot
    slot = _slot(api, c)
    assert len(slot) == 1, slot
    assert slot[0]["id"] == c.holder
    refused = state == "immutable" or (state == "verified" and cred == "run")
    if refused:
        # a field the type keeps, or a run over a verified fact: 403, nothing written
        assert status == 403, body
        assert body["code"] == "forbidden"
        if state == "immutable":
            # named as the door names it (`content.tier`; a file's `body.tier`)
            assert '.tier"' in json.dumps(body["details"]), body
        assert _counts() == before
        assert slot[0]["content"] == old[0]["content"]
        assert slot[0]["version"] == old[0]["version"]
        return
    assert status == 201, body
    assert body["outcome"] == "superseded", body
    assert _fact_id(body) == c.holder
    assert Fact.objects.count() == before[0]  # no fact beside it
    if cred == "run" and state == "app-asserted":
        # a run's new value of an app's: waits for a person, the app's still read meanwhile
        assert "asserted-overwrite" in _reasons(body), body
        if "status" in body:
            assert body["status"] == "pending-review"
        assert slot[0]["content"] == OLD
    else:
        assert _reasons(body) == [], body
        assert slot[0]["content"] == NEW
        assert slot[0]["version"] == old[0]["version"] + 1


@pytest.mark.django_db
@pytest.mark.parametrize("cred", CREDS)
def test_the_same_content_into_a_held_slot_is_unchanged(api: Any, world: Any, cred: str) -> None:
    # given: a slot the app holds with a value
    c = _case(world, cred, "app-asserted")
    before = _counts()
    # when: the credential posts the very same value into it
    status, body = _post(api, Case(c.writer, c.scope, c.holder, c.type, OLD, c.reader))
    # then: that fact, nothing written
    assert (status, body["outcome"], _fact_id(body)) == (200, "unchanged", c.holder), body
    assert _counts() == before


@pytest.mark.django_db
def test_a_runs_write_leaves_another_agents_slot_alone(api: Any, world: Any) -> None:
    # given: another agent's value of the slot (agents keep their own slots, README "Remember")
    other_agent = factories.agent_create(world.tenant, agent_id="other-bot")
    other = factories.run_create(world.app, world.project, agent=other_agent)
    scope = {"project_id": str(world.project.id), "participant_id": "participant-1"}
    theirs = services.fact_create(
        principal=other.principal, type="plan", key=KEY, content=OLD, scope=scope
    ).revision
    run = factories.run_create(world.app, world.project, agent=world.agent)
    # when: this agent's run posts its own value of the key
    status, body = _post(api, Case(run, scope, "", "plan", NEW, run))
    # then: its own fact, the other agent's untouched (a run never alters another agent's)
    assert (status, body["outcome"]) == (201, "created"), body
    assert _fact_id(body) != str(theirs.fact_id)
    assert Revision.objects.get(pk=theirs.pk).invalidated_at is None


@pytest.mark.django_db
def test_remember_over_an_apps_keyed_fact_is_its_next_value_and_waits(api: Any, world: Any) -> None:
    # given: the app's value of a slot the agent also remembers into
    declare(world.agent)
    c = _case(world, "run", "app-asserted")
    remembered = {"type": "plan", "key": KEY, "text": "On the free plan.", "tool_call_id": "r-1"}
    world.agent.memory_declarations = [{"type": "plan", "scope": "participant", "keep_days": 30}]
    world.agent.save()
    before = _counts()
    # when: the run remembers a value for that slot
    answer = api.post("/v1/remember", remembered, format="json", **c.writer.headers)
    # then: the app's fact's next value, waiting for a person; one value read meanwhile
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["fact"]["id"] == c.holder
    assert (body["outcome"], body["status"]) == ("superseded", "pending-review"), body
    assert "asserted-overwrite" in body["review"]["reasons"]
    assert Fact.objects.count() == before[0]
    assert [f["content"] for f in _slot(api, c)] == [OLD]


@pytest.mark.django_db
@pytest.mark.parametrize("cred", CREDS)
@pytest.mark.parametrize("asserter", ["app", "admin", "own"])
def test_a_runs_delete_of_an_asserted_fact_is_refused(
    api: Any, world: Any, cred: str, asserter: str
) -> None:
    # given: a fact in the writer's scope whose value an app or an admin asserted, or the
    # writer's own (a Kindgi user's key or staff read no end user's fact to assert one)
    c = _case(world, cred, "own")
    if asserter != "own":
        by = {"app": world.app, "admin": world.admin}[asserter]
        services.fact_supersede(principal=by.principal, fact_id=c.holder, content={"plan": "x"})
    before = _counts()
    # when: the credential deletes it
    answer = api.delete(f"/v1/facts/{c.holder}", **c.writer.headers)
    # then: a run is refused what a person, an app or staff asserted (its overwrite would wait
    # for review; a delete has nothing to wait beside), nothing changed; anyone else deletes
    if cred == "run" and asserter != "own":
        assert answer.status_code == 403, answer.json()
        assert answer.json()["code"] == "forbidden"
        assert _counts() == before
        assert [f["id"] for f in _slot(api, c)] == [c.holder]
    else:
        assert answer.status_code == 200, answer.json()
        assert _slot(api, c) == []


@pytest.mark.django_db(transaction=True)
@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
def test_concurrent_first_writes_of_one_slot_make_one_fact() -> None:
    # given: an empty slot, and six clients posting six values of it at once, each held before
    # it looks for the slot's holder until all six have passed their dedup (so none can have
    # seen another's fact: only the slot's lock can make them one)
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    # six apps' keys: one key's requests already queue on its row (its use is recorded)
    apps = [factories.app_key_create(tenant, [project]) for _ in range(6)]
    scope = {"project_id": str(project.id), "participant_id": "participant-1"}
    all_looked = threading.Barrier(6, timeout=30)
    real = create_module.slot_holder

    def holder_after_everyone_looked(*args: Any, **kwargs: Any) -> Any:
        all_looked.wait()
        return real(*args, **kwargs)

    def call(n: int) -> tuple[int, dict[str, Any]]:
        body = {"type": "plan", "key": KEY, "content": {"plan": f"v{n}"}, "scope": scope}
        try:
            response = APIClient().post("/v1/facts", body, format="json", **apps[n].headers)
            return response.status_code, response.json()
        finally:
            connection.close()

    # when: they all write
    with (
        mock.patch.object(create_module, "slot_holder", holder_after_everyone_looked),
        ThreadPoolExecutor(max_workers=6) as pool,
    ):
        answers = list(pool.map(call, range(6)))

    # then: one fact, whose six revisions are the six values in turn, one of them current
    assert sorted(a["outcome"] for _, a in answers) == ["created"] + ["superseded"] * 5, answers
    assert {a["fact"]["id"] for _, a in answers} == {str(Fact.objects.get(tenant=tenant).pk)}
    revisions = Revision.objects.filter(tenant=tenant)
    assert sorted(r.version for r in revisions) == [1, 2, 3, 4, 5, 6]
    assert revisions.filter(invalidated_at__isnull=True).count() == 1
