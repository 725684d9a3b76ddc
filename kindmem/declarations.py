"""An agent's memory declarations: the fact types its `remember` tool may write, for each the
scope it lands in and how long an unverified memory lives (`keep_days`).

Stored as JSON on `Agent.memory_declarations` so the console edits them as one field; this
module is the one place that says what a valid list looks like, used by the model's `clean()`
(and so by the admin form) and by the `remember` path, which reads them with `parse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from api.content_schema import schema_problems

# Where a remembered fact lands, filled from the run (see facts/remember.py).
SCOPES = ("participant", "user", "thread", "same-project", "tenant")
# Reach beyond one person: such memories always wait for a reviewer.
WIDE_SCOPES = frozenset({"same-project", "tenant"})
TYPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
MAX_KEEP_DAYS = 100 * 366
MAX_DECLARATIONS = 100
MAX_TOOLS = 200
TOOL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")


@dataclass(frozen=True)
class MemoryDeclaration:
    type: str
    scope: str
    keep_days: int
    # A JSON Schema (Draft 2020-12) the remembered content (`{"text": ..., "key": ...}`) must
    # fit (facts/content_schema.py), beside the tenant's schema for the type.
    schema: dict[str, Any] | None = None

    @property
    def is_wide(self) -> bool:
        return self.scope in WIDE_SCOPES


def _problems(value: Any) -> list[str]:
    if not isinstance(value, list):
        return ["Must be a list of {type, scope, keep_days} objects."]
    if len(value) > MAX_DECLARATIONS:
        return [f"At most {MAX_DECLARATIONS} declarations."]
    problems: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = f"Declaration {index + 1}"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be an object.")
            continue
        unknown = sorted(set(item) - {"type", "scope", "keep_days", "schema"})
        if unknown:
            problems.append(f"{where}: unknown keys {', '.join(unknown)}.")
        type_ = item.get("type")
        if not isinstance(type_, str) or len(type_) > 100 or not TYPE_PATTERN.match(type_):
            problems.append(
                f"{where}: type must be a name like 'preference' (letters, digits, _.:-)."
            )
        elif type_ in seen:
            problems.append(f"{where}: type {type_!r} is declared twice.")
        else:
            seen.add(type_)
        if item.get("scope") not in SCOPES:
            problems.append(f"{where}: scope must be one of {', '.join(SCOPES)}.")
        keep_days = item.get("keep_days")
        if (
            isinstance(keep_days, bool)
            or not isinstance(keep_days, int)
            or not 1 <= keep_days <= MAX_KEEP_DAYS
        ):
            problems.append(f"{where}: keep_days must be a whole number from 1 to {MAX_KEEP_DAYS}.")
        if "schema" in item:
            problems.extend(f"{where}: schema: {p}" for p in schema_problems(item["schema"]))
    return problems


def validate_memory_declarations(value: Any) -> None:
    """A Django validator: the whole list's problems at once, each naming its declaration."""
    problems = _problems(value)
    if problems:
        raise ValidationError(problems, code="invalid-declarations")


def validate_tools(value: Any) -> None:
    if (
        not isinstance(value, list)
        or len(value) > MAX_TOOLS
        or not all(isinstance(t, str) and TOOL_PATTERN.match(t) for t in value)
    ):
        raise ValidationError(
            'Must be a list of tool names (letters, digits, _.:-), e.g. ["send_email"].',
            code="invalid-tools",
        )


def parse(value: Any) -> dict[str, MemoryDeclaration]:
    """The valid declarations by type. An invalid stored list (edited outside the console)
    declares nothing rather than half of itself."""
    if _problems(value):
        return {}
    return {
        item["type"]: MemoryDeclaration(
            type=item["type"],
            scope=item["scope"],
            keep_days=item["keep_days"],
            schema=item.get("schema"),
        )
        for item in value
    }
