"""Who may set or change a fact's governance fields: the one table (`AUTHORITY`), and the one
function every write of a fact asks (`authorize`).

A fact's governance fields decide who reads it, whose it is and how long it stays: its legal
hold and retention, its subjects (whose access export and erasure it is part of), its trust.
Content is governed too, by the type: a write policy's `mutable_fields` bound which content
fields may change after the first write. Every door that writes a fact (`POST /v1/facts`, a
re-post of the same content, supersede, merge patch, `remember`, an import of any format,
extraction's proposals, verify) reaches `authorize` through the service it calls
(`fact_create`, `fact_supersede`, `slot_write`, `fact_propose`, `fact_verify`), before anything
is written; a refusal is 403 `forbidden` naming each field in `details`, and writes nothing.

A field is *touched* when the write would leave it other than it was: on a first write, other
than the tenant's policy for the type and the scope's default subjects; afterwards, other than
the current revision. A write that names a field with the value it already has touches nothing.

Whether an agent's overwrite of a person's or an app's fact waits for review is decided here
too (`overwrite_reasons`), beside who may change what, since it is the same question: a run
may propose a change of an asserted fact, never make one on its own; nor delete it
(`check_run_may_delete`). A keyed write into a slot a live fact holds reaches all of this as
that fact's supersede (`facts.create`, `facts.slots.slot_holder`), never as a new fact.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from api.errors import Forbidden
from facts.models import AttributionKind, Revision
from facts.retention import Retention, weakened
from facts.review import ASSERTED_OVERWRITE
from kindmem.access import Principal, PrincipalKind, is_privacy_officer


class Credential(StrEnum):
    """Who writes: an API key's kind, a run token, a staff member in the console, and what a
    memory file of an import carries (written as the importing credential, within its rights)."""

    ADMIN = "admin"  # a tenant admin's key
    USER = "user"  # a Kindgi user's key
    APP = "app"  # an app's key, for its projects' end users
    RUN = "run"  # an agent's run token
    STAFF = "staff"  # a staff member in the console (no key)
    IMPORT = "import"  # a memory file's own fields, on top of the importing credential's rule


class Change(StrEnum):
    SET = "set"  # give the field a value, or a stronger one (a hold, a later keep_until, ...)
    LIFT = "lift"  # weaken it: a hold lifted, a keep_until earlier or gone, fewer keep_days
    CHANGE = "change"  # a content field after the first write


class Rule(StrEnum):
    YES = "yes"
    NO = "no"
    OFFICER = "privacy officer only"  # a user in the privacy-officer group (staff: or superuser)
    OWN = "own person only"  # a run: its own participant or Kindgi user, nobody else
    MUTABLE = "mutable fields only"  # the type's write policy `mutable_fields` (empty: any)
    IMPORTER = "as the importing credential"  # a file carries it only where its importer may


Y, N, OFF, OWN, MUT, IMP = Rule.YES, Rule.NO, Rule.OFFICER, Rule.OWN, Rule.MUTABLE, Rule.IMPORTER
A, U, P, R, S, F = (
    Credential.ADMIN,
    Credential.USER,
    Credential.APP,
    Credential.RUN,
    Credential.STAFF,
    Credential.IMPORT,
)

# The table (docs/facts.md). Rows: (field, change); columns: credentials (A admin
# key, U user key, P app key, R run token, S staff in the console, F a memory file of an import).
# `trust` is set only by verifying (`POST /v1/facts/{id}/verify`, the console's approve & verify):
# no write's body carries it, and a memory file's claimed trust is dropped.
AUTHORITY: dict[tuple[str, Change], dict[Credential, Rule]] = {
    ("legal_hold", Change.SET): {A: Y, U: Y, P: Y, R: N, S: Y, F: IMP},
    ("legal_hold", Change.LIFT): {A: Y, U: OFF, P: N, R: N, S: OFF, F: IMP},
    ("keep_days", Change.SET): {A: Y, U: Y, P: Y, R: N, S: Y, F: IMP},
    ("keep_days", Change.LIFT): {A: Y, U: OFF, P: N, R: N, S: OFF, F: IMP},
    ("keep_until", Change.SET): {A: Y, U: Y, P: Y, R: N, S: Y, F: IMP},
    ("keep_until", Change.LIFT): {A: Y, U: OFF, P: N, R: N, S: OFF, F: IMP},
    ("subjects", Change.SET): {A: Y, U: Y, P: Y, R: OWN, S: Y, F: IMP},
    ("trust", Change.SET): {A: Y, U: Y, P: N, R: N, S: Y, F: N},
    ("content", Change.CHANGE): {A: MUT, U: MUT, P: MUT, R: MUT, S: MUT, F: IMP},
}
RETENTION_FIELDS = ("legal_hold", "keep_days", "keep_until")


class Door(StrEnum):
    """How a write arrived, where it matters to the table: an import's files are checked as a
    file (`Credential.IMPORT`) as well as their importer."""

    API = "api"
    IMPORT = "import"


def credential_of(principal: Principal) -> Credential:
    """The table's column for `principal`: a user with no key is a staff member in the console
    (`approvals.services.console_principal`)."""
    if principal.kind == PrincipalKind.USER and principal.api_key is None and principal.run is None:
        return Credential.STAFF
    return Credential(principal.kind.value)


@dataclass(frozen=True)
class Governed:
    """What a fact's governance fields are, before or after a write. `content` None before a
    first write (nothing to change yet)."""

    retention: Retention
    subjects: frozenset[tuple[str, str]]
    content: Any = None
    trust: str | None = None


def subject_set(subjects: Iterable[Any]) -> frozenset[tuple[str, str]]:
    """Subjects as (kind, id) pairs, from write inputs (`.id`) or rows (`.subject_id`), a Kindgi
    user's id in its canonical spelling."""
    pairs = set()
    for s in subjects:
        kind, ident = str(s.kind), str(s.subject_id if hasattr(s, "subject_id") else s.id)
        if kind == "user":
            with contextlib.suppress(ValueError):
                ident = str(uuid.UUID(ident))
        pairs.add((kind, ident))
    return frozenset(pairs)


def _officer(principal: Principal, credential: Credential) -> bool:
    user = principal.user
    if credential == Credential.STAFF and getattr(user, "is_superuser", False):
        return True
    return is_privacy_officer(user)


def _own_persons(principal: Principal) -> set[tuple[str, str]]:
    run = principal.run
    own: set[tuple[str, str]] = set()
    if run is not None and run.participant_id:
        own.add(("participant", run.participant_id))
    if run is not None and run.user_id:
        own.add(("user", str(run.user_id)))
    return own


def touched(before: Governed, after: Governed) -> dict[tuple[str, Change], Any]:
    """What a write changes of the governance fields, per table row, with what it changed
    (the fields' values, the subjects added and removed, the content fields)."""
    out: dict[tuple[str, Change], Any] = {}
    lifted = set(weakened(before.retention, after.retention))
    for name in RETENTION_FIELDS:
        old, new = getattr(before.retention, name), getattr(after.retention, name)
        if old != new:
            out[(name, Change.LIFT if name in lifted else Change.SET)] = new
    if before.subjects != after.subjects:
        out[("subjects", Change.SET)] = (
            after.subjects - before.subjects,
            before.subjects - after.subjects,
        )
    if after.trust is not None and after.trust != before.trust:
        out[("trust", Change.SET)] = after.trust
    if before.content is not None and before.content != after.content:
        out[("content", Change.CHANGE)] = (before.content, after.content)
    return out


def _content_refusals(
    before: Any, after: Any, mutable_fields: Sequence[str]
) -> dict[str, list[str]]:
    if not mutable_fields:
        return {}
    allowed = f"Immutable for this type; its mutable fields: {', '.join(mutable_fields)}."
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return {"content": [allowed]}
    missing = object()
    changed = sorted(
        str(k)
        for k in {*before, *after}
        if before.get(k, missing) != after.get(k, missing) and k not in mutable_fields
    )
    return {f"content.{name}": [allowed] for name in changed}


def _refusal(
    principal: Principal,
    credential: Credential,
    row: tuple[str, Change],
    what: Any,
    mutable_fields: Sequence[str],
) -> dict[str, list[str]]:
    """Why `credential` may not make this change (empty: it may)."""
    field, change = row
    rule = AUTHORITY[row][credential]
    if rule == Rule.YES or (rule == Rule.OFFICER and _officer(principal, credential)):
        return {}
    if rule == Rule.IMPORTER:
        return {}  # the importing credential's column decides (`authorize` asks it too)
    if rule == Rule.MUTABLE:
        before, after = what
        return _content_refusals(before, after, mutable_fields)
    if rule == Rule.OWN:
        added, removed = what
        others = sorted((added | removed) - _own_persons(principal))
        if not others:
            return {}
        named = ", ".join(f"{k}:{i}" for k, i in others)
        return {field: [f"A run names only its own participant or user as a subject, not {named}."]}
    verb = "lift or shorten" if change == Change.LIFT else "set"
    who = "a tenant admin or a privacy officer" if rule == Rule.OFFICER else "this credential"
    if credential == Credential.IMPORT:
        return {field: [f"A memory file never carries {field}: it is dropped, not imported."]}
    return {field: [f"Only {_who_may(row)} may {verb} it; not {who}."]}


def _who_may(row: tuple[str, Change]) -> str:
    names = {
        Credential.ADMIN: "a tenant admin",
        Credential.USER: "a Kindgi user",
        Credential.APP: "an app",
        Credential.RUN: "an agent's run",
        Credential.STAFF: "staff",
    }
    rules = AUTHORITY[row]
    may = [names[c] for c in names if rules[c] == Rule.YES]
    if any(rules[c] == Rule.OFFICER for c in names):
        may.append("a privacy officer")
    return ", ".join(may) if may else "nobody"


def may(principal: Principal, row: tuple[str, Change]) -> bool:
    """Whether `principal` may make a change of this row at all (its own persons and the
    type's mutable fields aside): what a route checks before it reads anything."""
    rule = AUTHORITY[row][credential_of(principal)]
    if rule == Rule.OFFICER:
        return _officer(principal, credential_of(principal))
    return rule != Rule.NO


def check_may(principal: Principal, row: tuple[str, Change]) -> None:
    """`may`, or the 403 `authorize` answers, naming the row's field."""
    if not may(principal, row):
        field, change = row
        verb = "lift or shorten" if change == Change.LIFT else "set"
        raise Forbidden(
            "This credential may not set or change these fields of the fact.",
            details={field: [f"Only {_who_may(row)} may {verb} it."]},
        )


def authorize(
    principal: Principal,
    *,
    before: Governed,
    after: Governed,
    mutable_fields: Sequence[str] = (),
    door: Door = Door.API,
) -> None:
    """Refuse, with 403 `forbidden` naming every refused field, a write of a fact by
    `principal` that takes its governance fields from `before` to `after` where the table
    forbids it. Call it before anything is written (the write's transaction then has nothing
    to undo)."""
    credential = credential_of(principal)
    problems: dict[str, list[str]] = {}
    for row, what in touched(before, after).items():
        if door == Door.IMPORT:
            problems.update(_refusal(principal, Credential.IMPORT, row, what, mutable_fields))
        problems.update(_refusal(principal, credential, row, what, mutable_fields))
    if problems:
        raise Forbidden(
            "This credential may not set or change these fields of the fact.",
            details=problems,
        )


def overwrite_reasons(principal: Principal, current: Revision | None) -> list[str]:
    """Why a run's new value of a fact waits for a person: the current value was asserted by a
    person, an app or staff (`asserted-overwrite`), not remembered by an agent. A verified
    fact or another agent's is refused before this is asked (`check_run_may_alter`)."""
    if principal.kind != PrincipalKind.RUN or current is None:
        return []
    if current.attributed_kind != AttributionKind.AGENT:
        return [ASSERTED_OVERWRITE]
    return []


def check_run_may_delete(principal: Principal, current: Revision) -> None:
    """A run's delete of a fact a person, an app or staff asserted is refused (403
    `forbidden`, nothing changed), where its overwrite of the same value waits for review
    (`overwrite_reasons`): the same question, the same value, answered as strictly. Refused
    rather than reviewed because a deletion has nothing to wait beside: an overwrite's pending
    value leaves the asserted one readable until a reviewer approves, while a pending delete
    would need a tombstone revision the approval queue, its compare-and-swap and every reader
    would have to learn, for a write a run never needs to make alone. A run that holds the
    value wrong writes the right one (it waits, `asserted-overwrite`); the asserter deletes."""
    if principal.kind != PrincipalKind.RUN or current.attributed_kind == AttributionKind.AGENT:
        return
    raise Forbidden(
        "This fact was asserted by a person, an app or staff: a run never deletes it (write its"
        " new value instead; that waits for review).",
        details={"attributed_to": [str(current.attributed_kind)]},
    )
