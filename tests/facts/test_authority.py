"""Who may set what (`facts.authority`): every (field, change) row of the table, through every
door that carries it, with every credential kind, expecting what the table itself says; then
what a run may and may not do to another's fact (review), and a fact frozen after an erasure.

The credential x field x door cases are generated from `AUTHORITY` and `DOORS`: a new row of the
table with no door that carries it fails `test_every_row_and_credential_is_exercised_by_a_door`,
and so does a new write service no door reaches."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from api.errors import KindmemError
from approvals.services import console_principal
from facts import services
from facts.authority import AUTHORITY, Change, Credential, Rule, credential_of
from facts.models import Fact, RetentionPolicy, Revision, Subject, WritePolicy
from facts.services import RetentionInput, SubjectInput
from kindmem.access import PRIVACY_OFFICER_GROUP, Principal
from kindmem.erasure import ErasureTarget
from privacy.erasure import erasure_run
from privacy.exports import access_export_document
from privacy.services import erasure_start
from tests import factories
from tests.facts.memory_file_requests import import_files, memory

pytestmark = pytest.mark.django_db

_n = itertools.count(1)
NOW = timezone.now()
FUTURE = (NOW + timedelta(days=400)).isoformat()
NEARER = (NOW + timedelta(days=200)).isoformat()
# what a write asks for to touch each retention row, and what the fact had before a lift
SET_TO = {"legal_hold": True, "keep_days": 30, "keep_until": FUTURE}
LIFT_FROM = {"legal_hold": True, "keep_days": 30, "keep_until": FUTURE}
LIFT_TO = {"legal_hold": False, "keep_days": 5, "keep_until": NEARER}
SOMEONE_ELSE = [{"kind": "participant", "id": "someone-else"}]
# the content row: a type whose write policy lets only `city` change
PROFILE = {"city": "Porto", "title": "Dr"}
RETITLED = {"city": "Porto", "title": "Prof"}


@dataclass
class Cred:
    """One credential of the world: its principal, its bearer headers (None for staff in the
    console, who write through the services the console calls), the scope it may write in."""

    name: str
    principal: Principal
    headers: dict[str, str] | None
    scope: dict[str, str]
    officer: bool = False


@dataclass
class Ctx:
    world: Any
    api: Any
    creds: dict[str, Cred] = field(default_factory=dict)


def _member(world: Any, *, officer: bool = False, staff: bool = False) -> Any:
    user = factories.user_create(world.tenant, projects=[world.project])
    if officer:
        user.groups.add(Group.objects.get_or_create(name=PRIVACY_OFFICER_GROUP)[0])
    if staff:
        user.is_staff = True
        user.save()
    return user


@pytest.fixture
def ctx(api: Any, world: Any) -> Ctx:
    project = str(world.project.id)
    for_participant = {"project_id": project, "participant_id": "participant-1"}

    def for_user(user: Any) -> dict[str, str]:
        return {"project_id": project, "user_id": str(user.id)}

    run = factories.run_create(world.app, world.project)
    officer = _member(world, officer=True)
    officer_key = factories.user_key_create(officer)
    staff, staff_officer = _member(world, staff=True), _member(world, staff=True, officer=True)
    c = Ctx(world, api)
    for cred in [
        Cred("admin", world.admin.principal, world.admin.headers, for_participant),
        Cred("user", world.user_key.principal, world.user_key.headers, for_user(world.user)),
        Cred("officer", officer_key.principal, officer_key.headers, for_user(officer), True),
        Cred("app", world.app.principal, world.app.headers, for_participant),
        Cred("run", run.principal, run.headers, for_participant),
        Cred("staff", console_principal(staff, world.tenant.id), None, for_user(staff)),
        Cred(
            "staff-officer",
            console_principal(staff_officer, world.tenant.id),
            None,
            for_user(staff_officer),
            True,
        ),
    ]:
        c.creds[cred.name] = cred
    return c


CRED_NAMES = ["admin", "user", "officer", "app", "run", "staff", "staff-officer"]
HTTP = [n for n in CRED_NAMES if not n.startswith("staff")]


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


def _served(call: Callable[[], Any]) -> Answer:
    """A service call as the API would answer it (staff's door: the console calls services)."""
    try:
        call()
    except KindmemError as exc:
        return Answer(exc.status_code, {"code": exc.code, "details": exc.details})
    return Answer(201, {})


def _http(response: Any) -> Answer:
    return Answer(response.status_code, response.json())


def _baseline(c: Ctx, cred: Cred, *, type: str = "note", content: Any = None, **kw: Any) -> str:
    """A fact in `cred`'s scope, written by the tenant admin (never refused): its id."""
    written = services.fact_create(
        principal=c.world.admin.principal,
        type=type,
        content=content if content is not None else {"text": f"fact {next(_n)}"},
        scope=cred.scope,
        **kw,
    )
    return str(written.revision.fact_id)


def _profile_type(c: Ctx) -> None:
    WritePolicy.objects.get_or_create(
        tenant=c.world.tenant, fact_type="profile", defaults={"mutable_fields": ["city"]}
    )


def _touch(row: tuple[str, Change]) -> dict[str, Any]:
    """The request fields that touch `row` (retention or subjects)."""
    name, change = row
    if name == "subjects":
        return {"subjects": SOMEONE_ELSE}
    return {"retention": {name: (LIFT_TO if change == Change.LIFT else SET_TO)[name]}}


def _service_kwargs(touch: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "retention" in touch:
        out["retention"] = RetentionInput(**_parsed_retention(touch["retention"]))
    if "subjects" in touch:
        out["subjects"] = [SubjectInput(s["kind"], s["id"]) for s in touch["subjects"]]
    return out


def _parsed_retention(retention: dict[str, Any]) -> dict[str, Any]:
    from datetime import datetime

    return {k: datetime.fromisoformat(v) if k == "keep_until" else v for k, v in retention.items()}


# --- the doors -------------------------------------------------------------------------------
# Each door says which rows it carries and which credentials reach it, and makes one write that
# touches the row (setting up what that needs first). It answers as the API does.

RETENTION_ROWS = {r for r in AUTHORITY if r[0] in ("legal_hold", "keep_days", "keep_until")}
SUBJECTS = ("subjects", Change.SET)
CONTENT = ("content", Change.CHANGE)
TRUST = ("trust", Change.SET)


Write = Callable[[], Answer]


def _send(c: Ctx, cred: Cred, method: str, url: str, body: Any, service: Write) -> Write:
    """The write as `cred` makes it: through the route with its key, through the service the
    console calls for staff."""
    if cred.headers is None:
        return lambda: _served(service)
    headers = cred.headers
    if method == "PATCH":
        return lambda: _http(
            c.api.generic(
                "PATCH",
                url,
                json.dumps(body),
                content_type="application/merge-patch+json",
                **headers,
            )
        )
    return lambda: _http(c.api.post(url, body, format="json", **headers))


def post(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/facts`, a new fact: a lift is against the type's retention policy."""
    type = "note"
    if row[1] == Change.LIFT:
        type = "held"
        RetentionPolicy.objects.create(
            tenant=c.world.tenant, fact_type=type, **{row[0]: LIFT_FROM[row[0]]}
        )
    given = {"type": type, "content": {"text": f"new {next(_n)}"}, "scope": cred.scope}
    touch = _touch(row)
    return _send(
        c,
        cred,
        "POST",
        "/v1/facts",
        {**given, **touch},
        lambda: services.fact_create(principal=cred.principal, **given, **_service_kwargs(touch)),
    )


def _lift_base(row: tuple[str, Change]) -> dict[str, Any]:
    if row[1] != Change.LIFT:
        return {}
    return {"retention": RetentionInput(**_parsed_retention({row[0]: LIFT_FROM[row[0]]}))}


def repost(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/facts` of content the fact already holds: that fact's next revision."""
    given = {"type": "note", "content": {"text": f"again {next(_n)}"}, "scope": cred.scope}
    _baseline(c, cred, content=given["content"], **_lift_base(row))
    touch = _touch(row)
    return _send(
        c,
        cred,
        "POST",
        "/v1/facts",
        {**given, **touch},
        lambda: services.fact_create(principal=cred.principal, **given, **_service_kwargs(touch)),
    )


def supersede(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/facts/{id}/supersede`."""
    if row == CONTENT:
        _profile_type(c)
        fact_id, touch, content = _baseline(c, cred, type="profile", content=PROFILE), {}, RETITLED
    else:
        fact_id, touch = _baseline(c, cred, **_lift_base(row)), _touch(row)
        content = {"text": f"next {next(_n)}"}
    return _send(
        c,
        cred,
        "POST",
        f"/v1/facts/{fact_id}/supersede",
        {"content": content, **touch},
        lambda: services.fact_supersede(
            principal=cred.principal, fact_id=fact_id, content=content, **_service_kwargs(touch)
        ),
    )


def patch(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`PATCH /v1/facts/{id}`, a merge patch of one immutable field."""
    _profile_type(c)
    fact_id = _baseline(c, cred, type="profile", content=PROFILE)
    change = {"content": {"title": RETITLED["title"]}}
    return _send(
        c,
        cred,
        "PATCH",
        f"/v1/facts/{fact_id}",
        change,
        lambda: services.fact_patch(principal=cred.principal, fact_id=fact_id, patch=change),
    )


def import_file(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/facts/import`, one memory file carrying the field in kindmem's extension."""
    stem = f"file-{next(_n)}"
    text = memory(stem, f"imported {stem}", kindmem=_touch(row))
    assert cred.headers is not None
    return lambda: _http(
        import_files(c.api, cred, text, content_type="text/markdown", **cred.scope)
    )


def verify(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/facts/{id}/verify` (the console's approve & verify calls `fact_verify`)."""
    fact_id = _baseline(c, cred)
    return _send(
        c,
        cred,
        "POST",
        f"/v1/facts/{fact_id}/verify",
        {},
        lambda: services.fact_verify(principal=cred.principal, fact_id=fact_id),
    )


def remember(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """`POST /v1/remember`, a new value of the run's own slot, whose text is immutable."""
    run = cred.principal.run
    assert run is not None
    assert cred.headers is not None
    run.agent.memory_declarations = [{"type": "pref", "scope": "participant", "keep_days": 30}]
    run.agent.save()
    WritePolicy.objects.create(tenant=c.world.tenant, fact_type="pref", mutable_fields=["key"])
    first = {"type": "pref", "key": "drink", "text": "Likes tea.", "tool_call_id": "t-1"}
    assert c.api.post("/v1/remember", first, format="json", **cred.headers).status_code == 201
    again = {**first, "text": "Likes coffee.", "tool_call_id": "t-2"}
    return _send(c, cred, "POST", "/v1/remember", again, lambda: None)


def extraction(c: Ctx, cred: Cred, row: tuple[str, Change]) -> Write:
    """Extraction's update: the run's proposed next value (`fact_propose`, what the runner
    calls for a contradiction)."""
    _profile_type(c)
    fact_id = _baseline(c, cred, type="profile", content=PROFILE)
    return lambda: _served(
        lambda: services.fact_propose(
            principal=cred.principal, fact_id=fact_id, content=RETITLED, reasons=["contradiction"]
        )
    )


@dataclass(frozen=True)
class Door:
    prepare: Callable[[Ctx, Cred, tuple[str, Change]], Callable[[], Answer]]
    rows: frozenset[tuple[str, Change]]
    creds: tuple[str, ...]
    service: str  # the write service the door reaches (the coverage test's check)
    file: bool = False  # a memory file's fields: the table's import column applies too


LIFTS_ON_CREATE = {("legal_hold", Change.LIFT), ("keep_days", Change.LIFT)}  # via a policy
SETS = {r for r in RETENTION_ROWS if r[1] == Change.SET}
DOORS: dict[str, Door] = {
    "post": Door(
        post, frozenset(SETS | LIFTS_ON_CREATE | {SUBJECTS}), tuple(CRED_NAMES), "fact_create"
    ),
    "repost": Door(
        repost, frozenset(RETENTION_ROWS | {SUBJECTS}), tuple(CRED_NAMES), "fact_create"
    ),
    "supersede": Door(
        supersede,
        frozenset(RETENTION_ROWS | {SUBJECTS, CONTENT}),
        tuple(CRED_NAMES),
        "fact_supersede",
    ),
    "patch": Door(patch, frozenset({CONTENT}), tuple(CRED_NAMES), "fact_patch"),
    "import": Door(import_file, frozenset(SETS | {SUBJECTS}), tuple(HTTP), "fact_create", True),
    "verify": Door(verify, frozenset({TRUST}), tuple(CRED_NAMES), "fact_verify"),
    "remember": Door(remember, frozenset({CONTENT}), ("run",), "slot_write"),
    "extraction": Door(extraction, frozenset({CONTENT}), ("run",), "fact_propose"),
}


def allowed(row: tuple[str, Change], cred: Cred, door: Door) -> bool:
    """What the table says of this write (each door's write touches its row the hard way: a
    run names someone else, a content change touches an immutable field)."""
    rules = [AUTHORITY[row][credential_of(cred.principal)]]
    if door.file:
        rules.append(AUTHORITY[row][Credential.IMPORT])
    for rule in rules:
        if rule in (Rule.NO, Rule.OWN, Rule.MUTABLE):
            return False
        if rule == Rule.OFFICER and not cred.officer:
            return False
    return True


CASES = [
    pytest.param(row, name, cred, id=f"{row[0]}-{row[1]}-{name}-{cred}")
    for row in AUTHORITY
    for name, door in DOORS.items()
    if row in door.rows
    for cred in door.creds
]


@pytest.mark.parametrize(("row", "door_name", "cred_name"), CASES)
def test_each_credential_sets_each_field_through_each_door_only_as_the_table_says(
    ctx: Ctx, row: tuple[str, Change], door_name: str, cred_name: str
) -> None:
    # given: a credential, and a door that carries the field
    door, cred = DOORS[door_name], ctx.creds[cred_name]

    write = door.prepare(ctx, cred, row)
    before = _counts()

    # when: it writes, touching the field
    answer = write()

    # then: refused exactly where the table refuses, 403 naming the field, nothing written
    if allowed(row, cred, door):
        assert answer.status in (200, 201), (answer.status, answer.body)
        assert _counts() != before
    else:
        assert answer.status == 403, (answer.status, answer.body)
        assert answer.body["code"] == "forbidden"
        assert row[0] in json.dumps(answer.body["details"]), answer.body
        assert _counts() == before


def _counts() -> tuple[int, int, int]:
    return Fact.objects.count(), Revision.objects.count(), Subject.objects.count()


# Write services that touch no governance field: delete (retention forbids it or not,
# `retention-violation`; a run's of an asserted fact is refused: tests/facts/test_slot_doors.py),
# a reviewer's approve and reject (of a value a door already let in), and the row lock a
# decision takes before it checks for a stale value (`facts.stale`).
NOT_GOVERNING = {"fact_delete", "revision_approve", "revision_reject", "fact_lock"}


def test_every_row_and_credential_is_exercised_by_a_door() -> None:
    # given: the table, the doors and the facts write services
    carried = {row for door in DOORS.values() for row in door.rows}
    reached = {credential_of(_principal_named(n)) for d in DOORS.values() for n in d.creds}
    writers = {n for n in services.__all__ if n.startswith(("fact_", "revision_"))}
    # then: each row is carried by some door, each credential column written through one, a
    # file's column too (the import), and each write service is a door's or touches nothing
    assert set(AUTHORITY) <= carried, set(AUTHORITY) - carried
    assert set(Credential) - {Credential.IMPORT} <= reached
    assert any(d.file for d in DOORS.values())
    assert writers - NOT_GOVERNING <= {d.service for d in DOORS.values()}


def _principal_named(name: str) -> Principal:
    """A principal of the kind a credential name stands for (no database: its column only)."""
    import uuid

    from kindmem.access import PrincipalKind

    kinds = {
        "admin": PrincipalKind.ADMIN,
        "user": PrincipalKind.USER,
        "officer": PrincipalKind.USER,
        "app": PrincipalKind.APP,
        "run": PrincipalKind.RUN,
    }
    if name.startswith("staff"):
        return Principal(kind=PrincipalKind.USER, tenant_id=uuid.uuid4())
    return Principal(kind=kinds[name], tenant_id=uuid.uuid4(), api_key=object())  # type: ignore[arg-type]


def test_a_run_names_its_own_participant_and_changes_mutable_fields(ctx: Ctx) -> None:
    # given: a run, and a profile type whose `city` may change
    run = ctx.creds["run"]
    _profile_type(ctx)
    # when: it writes a fact naming its own participant, and changes only a mutable field
    own = ctx.api.post(
        "/v1/facts",
        {
            "type": "profile",
            "content": PROFILE,
            "scope": run.scope,
            "subjects": [{"kind": "participant", "id": "participant-1"}],
        },
        format="json",
        **run.headers,
    )
    assert own.status_code == 201, own.json()
    fact_id = own.json()["fact"]["id"]
    moved = ctx.api.generic(
        "PATCH",
        f"/v1/facts/{fact_id}",
        json.dumps({"content": {"city": "Braga"}}),
        content_type="application/merge-patch+json",
        **run.headers,
    )
    # then: both are written
    assert moved.status_code in (200, 201), moved.json()
    assert own.json()["fact"]["subjects"] == [{"kind": "participant", "id": "participant-1"}]


def test_a_runs_overwrite_of_an_apps_fact_waits_for_review_on_every_door(ctx: Ctx) -> None:
    # given: a fact the app asserted about the run's participant
    app, run = ctx.creds["app"], ctx.creds["run"]
    written = ctx.api.post(
        "/v1/facts",
        {"type": "note", "content": {"text": "Plan: basic."}, "scope": app.scope},
        format="json",
        **app.headers,
    ).json()["fact"]
    url = f"/v1/facts/{written['id']}"
    # when: the run supersedes it, patches it, and re-posts it with its own participant named
    superseded = ctx.api.post(
        f"{url}/supersede", {"content": {"text": "Plan: pro."}}, format="json", **run.headers
    )
    patched = ctx.api.generic(
        "PATCH",
        url,
        json.dumps({"content": {"text": "Plan: gold."}}),
        content_type="application/merge-patch+json",
        **run.headers,
    )
    # then: each new value waits for a person, saying why; every reader still reads the app's
    for answer in (superseded, patched):
        assert answer.status_code == 201, answer.json()
        assert answer.json()["fact"]["review"] == "pending"
        assert "asserted-overwrite" in answer.json()["review"]["reasons"]
    read = ctx.api.get(url, **run.headers).json()
    assert read["content"] == {"text": "Plan: basic."}
    assert ctx.api.get(url, **app.headers).json()["version"] == 1


def test_a_runs_new_value_of_its_slot_the_app_took_over_waits_for_review(ctx: Ctx) -> None:
    # given: the run's slot, whose value the app then replaced
    run, app = ctx.creds["run"], ctx.creds["app"]
    agent = run.principal.run.agent
    agent.memory_declarations = [{"type": "pref", "scope": "participant", "keep_days": 30}]
    agent.save()
    body = {"type": "pref", "key": "drink", "text": "Likes tea.", "tool_call_id": "s-1"}
    first = ctx.api.post("/v1/remember", body, format="json", **run.headers).json()
    fact_id = first["fact"]["id"]
    taken = ctx.api.post(
        f"/v1/facts/{fact_id}/supersede",
        {"content": {"text": "Likes water.", "key": "drink"}},
        format="json",
        **app.headers,
    )
    assert taken.status_code == 201, taken.json()
    # when: the run remembers a new value for the slot
    again = {**body, "text": "Likes coffee.", "tool_call_id": "s-2"}
    answer = ctx.api.post("/v1/remember", again, format="json", **run.headers)
    # then: it waits for a person (`asserted-overwrite`); the app's value is still the fact
    assert answer.status_code == 201, answer.json()
    assert "asserted-overwrite" in answer.json()["review"]["reasons"]
    read = ctx.api.get(f"/v1/facts/{fact_id}", **app.headers).json()
    assert read["content"]["text"] == "Likes water."


def test_a_runs_new_value_of_its_own_agents_fact_lands_without_review(ctx: Ctx) -> None:
    # given: a fact the run's agent wrote about its participant
    run = ctx.creds["run"]
    written = ctx.api.post(
        "/v1/facts",
        {"type": "note", "content": {"text": "Plan: basic."}, "scope": run.scope},
        format="json",
        **run.headers,
    ).json()["fact"]
    # when: the run supersedes it
    answer = ctx.api.post(
        f"/v1/facts/{written['id']}/supersede",
        {"content": {"text": "Plan: pro."}},
        format="json",
        **run.headers,
    )
    # then: its own memory moves on at once
    assert answer.status_code == 201, answer.json()
    assert answer.json()["review"] is None
    assert answer.json()["fact"]["content"] == {"text": "Plan: pro."}


def test_a_legally_held_fact_of_an_erased_person_is_frozen_but_exported(ctx: Ctx) -> None:
    # given: a fact about participant-1 under legal hold, and another not
    admin, app = ctx.creds["admin"], ctx.creds["app"]
    held_id = _baseline(
        ctx,
        app,
        content={"text": "zqfrozen contract terms"},
        retention=RetentionInput(legal_hold=True),
    )
    _baseline(ctx, app, content={"text": "zqfrozen small talk"})
    # and a run's new value of the held fact, waiting for a reviewer (the app asserted it)
    waiting = ctx.api.post(
        f"/v1/facts/{held_id}/supersede",
        {"content": {"text": "zqfrozen new terms"}},
        format="json",
        **ctx.creds["run"].headers,
    ).json()
    assert waiting["review"]["reasons"] == ["asserted-overwrite"]
    # when: the person is erased, to the end
    request = erasure_start(
        tenant_id=ctx.world.tenant.id,
        target_kind="participant",
        target_id="participant-1",
        reason="asked",
        requested_by="admin:test",
    )
    assert erasure_run(erasure_id=request.id).status == "completed"
    # then: the held fact is kept, frozen, and no credential reads it: detail, history, list,
    # search
    assert Fact.objects.get(pk=held_id).frozen_at is not None
    other_run = factories.run_create(ctx.world.app, ctx.world.project, participant_id="p-9")
    for headers in (admin.headers, app.headers, other_run.headers):
        assert ctx.api.get(f"/v1/facts/{held_id}", **headers).status_code == 404
        assert ctx.api.get(f"/v1/facts/{held_id}/revisions", **headers).status_code == 404
        listed = ctx.api.get("/v1/facts", **headers).json()["facts"]
        assert held_id not in {f["id"] for f in listed}
        found = ctx.api.post(
            "/v1/facts/search",
            {"query": "zqfrozen contract", "mode": "keyword"},
            format="json",
            **headers,
        )
        assert found.status_code == 200, found.json()
        assert held_id not in {h["fact"]["id"] for h in found.json()["hits"]}
    # and nobody writes it: patch, supersede, verify, delete, link are all 404, nothing written
    before = _counts()
    url = f"/v1/facts/{held_id}"
    attempts = [
        ctx.api.generic(
            "PATCH",
            url,
            json.dumps({"content": {"text": "x"}}),
            content_type="application/merge-patch+json",
            **admin.headers,
        ),
        ctx.api.post(f"{url}/supersede", {"content": "x"}, format="json", **admin.headers),
        ctx.api.post(f"{url}/verify", {}, format="json", **admin.headers),
        ctx.api.delete(url, **admin.headers),
    ]
    assert [a.status_code for a in attempts] == [404] * 4
    # and no reviewer lands the value that waited beside it, nor rejects it
    for decision in ("approve", "reject"):
        decided = ctx.api.post(
            f"/v1/approvals/{waiting['approval_id']}/{decision}",
            {},
            format="json",
            **admin.headers,
        )
        assert decided.status_code in (404, 409), decided.json()
    assert _counts() == before
    assert Revision.objects.filter(fact_id=held_id, invalidated_at__isnull=True).count() == 2
    # and the privacy officer's access export still holds it, with its hold
    document = access_export_document(
        ErasureTarget(ctx.world.tenant.id, "participant", "participant-1")
    )
    [kept] = [f for f in document["facts"] if f["id"] == held_id]
    assert kept["revisions"][-1]["retention"]["legal_hold"] is True
    # and a new fact about the person (they came back) is an ordinary one
    back = ctx.api.post(
        "/v1/facts",
        {"type": "note", "content": {"text": "back again"}, "scope": app.scope},
        format="json",
        **app.headers,
    )
    assert back.status_code == 201
    new_run = factories.run_create(ctx.world.app, ctx.world.project, thread_id="thread-2")
    reread = ctx.api.get(f"/v1/facts/{back.json()['fact']['id']}", **new_run.headers)
    assert reread.status_code == 200
