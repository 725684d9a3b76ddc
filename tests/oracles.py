"""The seed's guards in Python, ported case for case: the test oracles the SQL guards in
`kindmem/guards.py` are held against (no read path calls them).

- `is_readable_by`: `@kindgi/memory`'s `isReadableBy`, over a fact's scope (a mapping with any
  of `org_id`, `project_id`, `user_id`, `participant_id`, `thread_id`, `session_id`; a missing
  key or a None value means the scope does not name that container).
- `is_recall_readable_by`: its `isRecallReadableBy`, over a conversation (`RecallRow`).
  Stricter than facts': a conversation is always someone's, so an app's credential never
  opens an end user's conversation through `user_ids`, only `on_behalf_of_project_ids`.
  One case departs from the seed: acting for a project's end users opens no Kindgi user's own
  conversation (a user and no participant), as DESIGN rule 1 asks (`_of_a_kindgi_user`).
- `is_run_readable_by`: the recall rule applied to a run (a run always has a project), with
  the same departure.
- `memory_file_problems`: `@fgv/ts-agent-memory`'s parsing of a memory file (below): every file
  kindmem writes must pass it, and kindmem's import refuses every file it refuses.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kindmem.access import Readers


def is_readable_by(scope: Mapping[str, str | None], readers: Readers) -> bool:
    """Whether `readers` may see a fact in `scope` (@kindgi/memory `isReadableBy`).

    Each container the scope names must be one the readers have: its project (or one they act
    in for all end users); its org, for an org-wide fact (no project); its user; its
    participant, or the project on behalf of all of them; its thread, or the project on behalf
    of all of them. A fact naming none of them is tenant-wide. The session is not a container.
    """
    if readers.all:
        return True
    project = scope.get("project_id")
    org = scope.get("org_id")
    user = scope.get("user_id")
    participant = scope.get("participant_id")
    thread = scope.get("thread_id")
    on_behalf = project is not None and project in readers.on_behalf_of_project_ids
    if project is not None and not (project in readers.project_ids or on_behalf):
        return False
    if project is None and org is not None and org not in readers.org_ids:
        return False
    if user is not None and user not in readers.user_ids:
        return False
    if participant is not None and not (participant in readers.participant_ids or on_behalf):
        return False
    return not (thread is not None and not (thread in readers.thread_ids or on_behalf))


@dataclass(frozen=True)
class RecallRow:
    """The containers a recalled message's conversation is in (ids as strings, None if absent)."""

    conversation_id: str
    project_id: str | None = None
    participant_id: str | None = None
    user_id: str | None = None


def _has(ids: Collection[str], value: str | None) -> bool:
    return value is not None and value in ids


def _of_a_kindgi_user(participant_id: str | None, user_id: str | None) -> bool:
    """Whether a conversation's (or a run's) person is a Kindgi user: a user and no end user.

    The seed's `isRecallReadableBy` lets `onBehalf` (an app acting for its project's end users)
    open it. kindmem does not: an app's key acts for its end users only and never reads a Kindgi
    user's personal scope (DESIGN rule 1), as `is_readable_by` already keeps that user's facts
    from it; the seed's guard would hand the same person's conversations and run log to it."""
    return participant_id is None and user_id is not None


def is_recall_readable_by(row: RecallRow, readers: Readers) -> bool:
    """Whether `readers` may recall a message of this conversation (the seed, case for case,
    but for a Kindgi user's own conversation: `_of_a_kindgi_user`)."""
    if readers.all:
        return True
    project = row.project_id
    on_behalf = _has(readers.on_behalf_of_project_ids, project)
    # Its project: one the readers have, or act in for every end user.
    if project is not None and not (_has(readers.project_ids, project) or on_behalf):
        return False
    # Its person: the end user when there is one, else the Kindgi user its turns acted for.
    if row.participant_id is not None:
        is_person = _has(readers.participant_ids, row.participant_id)
    else:
        is_person = _has(readers.user_ids, row.user_id)
    # Acting for every end user opens every end user's, and no one's; not a Kindgi user's.
    for_end_users = on_behalf and not _of_a_kindgi_user(row.participant_id, row.user_id)
    return is_person or _has(readers.thread_ids, row.conversation_id) or for_end_users


def is_run_readable_by(run: dict[str, Any], readers: Readers) -> bool:
    """Python reference of `kindmem.guards.run_guard`: the seed's `isRecallReadableBy` (a run
    always has a project), with `is_recall_readable_by`'s departure for a Kindgi user's run.
    `run` maps project_id, participant_id, user_id, thread_id to strings or None."""
    if readers.all:
        return True

    def has(ids: frozenset[str], value: str | None) -> bool:
        return value is not None and value in ids

    project = run["project_id"]
    on_behalf = has(readers.on_behalf_of_project_ids, project)
    if not (has(readers.project_ids, project) or on_behalf):
        return False
    if run["participant_id"] is not None:
        is_person = has(readers.participant_ids, run["participant_id"])
    else:
        is_person = has(readers.user_ids, run["user_id"])
    for_end_users = on_behalf and not _of_a_kindgi_user(run["participant_id"], run["user_id"])
    return is_person or has(readers.thread_ids, run["thread_id"]) or for_end_users


# ---- the 003 seed's memory files (@fgv/ts-agent-memory) -----------------------------------------
#
# Its parsing rules, ported on their own (nothing of facts/memory_files.py): `splitFrontmatter`
# (a file starts with `---\n`; the frontmatter ends at the first `\n---\n` after it; the body is
# the rest), the frontmatter read as YAML, and `envelopeConverter`: every field of
# `IMemoryEnvelope` checked against its declared type, no other top-level key, the `id` the
# file's name stem (`verifyFilenameId`, on the portable filename set of
# `assertPortableFilenameStem`), each link an `IEdge`, `provenance` an `IProvenance` (`source` a
# string; extra keys are its consumer's), times numbers (epoch ms).

ENVELOPE_FIELDS = {
    "id": True,  # required?
    "entityId": True,
    "kind": True,
    "tags": True,
    "links": True,
    "created": True,
    "updated": True,
    "seq": True,
    "contentHash": True,
    "provenance": True,
    "temporal": False,
    "embeddingRef": False,
}
IEDGE_FIELDS = {
    "type": True,
    "target": True,
    "confidence": False,
    "provenance": False,
    "valid_at": False,
    "invalid_at": False,
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _provenance_problems(value: Any, at: str) -> list[str]:
    if not isinstance(value, dict):
        return [at]
    problems = [] if isinstance(value.get("source"), str) else [f"{at}.source"]
    problems += [
        f"{at}.{k}" for k in ("by", "model") if k in value and not isinstance(value[k], str)
    ]
    if "confidence" in value and not _number(value["confidence"]):
        problems.append(f"{at}.confidence")
    if "derivedFrom" in value and not _text(value["derivedFrom"]):
        problems.append(f"{at}.derivedFrom")
    return problems


def _edge_problems(edge: Any, at: str) -> list[str]:
    if not isinstance(edge, dict):
        return [at]
    problems = [f"{at}.{k}" for k in edge if k not in IEDGE_FIELDS]
    problems += [f"{at}.{k}" for k, needed in IEDGE_FIELDS.items() if needed and k not in edge]
    problems += [f"{at}.{k}" for k in ("type", "target") if k in edge and not _text(edge[k])]
    if "confidence" in edge and not _number(edge["confidence"]):
        problems.append(f"{at}.confidence")
    if "provenance" in edge:
        problems += _provenance_problems(edge["provenance"], f"{at}.provenance")
    if "valid_at" in edge and not _number(edge["valid_at"]):
        problems.append(f"{at}.valid_at")
    if "invalid_at" in edge and not (edge["invalid_at"] is None or _number(edge["invalid_at"])):
        problems.append(f"{at}.invalid_at")
    return problems


def memory_file_problems(raw: str, stem: str | None = None) -> list[str]:
    """What the seed refuses in a memory file (`[]`: it parses), by field."""
    import re

    import yaml

    if not raw.startswith("---\n"):
        return ["frontmatter"]
    end = raw.find("\n---\n", 3)
    if end < 0:
        return ["frontmatter"]
    try:
        envelope = yaml.safe_load(raw[4:end] if end > 3 else "")
    except yaml.YAMLError:
        return ["frontmatter"]
    if not isinstance(envelope, dict):
        return ["frontmatter"]
    problems = [str(k) for k in envelope if k not in ENVELOPE_FIELDS]
    problems += [k for k, needed in ENVELOPE_FIELDS.items() if needed and k not in envelope]
    if "id" in envelope:
        ident = envelope["id"]
        portable = (
            _text(ident)
            and re.fullmatch(r"[A-Za-z0-9._-]+", ident)
            and not ident.startswith(".")
            and not ident.endswith(".")
        )
        if not portable or (stem is not None and ident != stem):
            problems.append("id")
    problems += [k for k in ("entityId", "kind") if k in envelope and not _text(envelope[k])]
    if "tags" in envelope and not (
        isinstance(envelope["tags"], list) and all(_text(t) for t in envelope["tags"])
    ):
        problems.append("tags")
    if "links" in envelope:
        if isinstance(envelope["links"], list):
            for i, edge in enumerate(envelope["links"]):
                problems += _edge_problems(edge, f"links[{i}]")
        else:
            problems.append("links")
    problems += [
        k for k in ("created", "updated", "seq") if k in envelope and not _number(envelope[k])
    ]
    if "contentHash" in envelope and not isinstance(envelope["contentHash"], str):
        problems.append("contentHash")
    if "provenance" in envelope:
        problems += _provenance_problems(envelope["provenance"], "provenance")
    if "temporal" in envelope:
        temporal = envelope["temporal"]
        if not isinstance(temporal, dict) or set(temporal) - {"valid_at", "invalid_at"}:
            problems.append("temporal")
        else:
            if "valid_at" in temporal and not _number(temporal["valid_at"]):
                problems.append("temporal.valid_at")
            if "invalid_at" in temporal and not (
                temporal["invalid_at"] is None or _number(temporal["invalid_at"])
            ):
                problems.append("temporal.invalid_at")
    if "embeddingRef" in envelope and not (
        envelope["embeddingRef"] is None or isinstance(envelope["embeddingRef"], str)
    ):
        problems.append("embeddingRef")
    return problems
