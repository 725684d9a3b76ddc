"""Per-type content schemas (seed 003's `registerSchema`): a fact type may carry a JSON Schema
(Draft 2020-12, the `jsonschema` library), on its tenant's write policy or on an agent's memory
declaration; every write and patch of that type is validated against it, each problem named by
its path in the content. Reads never are: a stored fact that no longer fits a changed schema
still reads as it was written.

A schema is checked when it is saved (`schema_problems`), so a write never meets a broken one.
`$ref`s resolve only inside the schema itself: nothing is fetched. Generic (no models): the
agents' declarations (kindmem/declarations.py), facts and remember share it."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from api.errors import InvalidFact

MAX_PROBLEMS = 20


def schema_problems(schema: Any) -> list[str]:
    """Why `schema` is not a usable Draft 2020-12 schema (empty when it is)."""
    if not isinstance(schema, dict):
        return ["A content schema is a JSON object (a JSON Schema, Draft 2020-12)."]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [f"Not a valid JSON Schema (Draft 2020-12): {exc.message} at {_path(exc.path)}."]
    remote = sorted(_remote_refs(schema))
    if remote:
        return [f"Only $refs inside the schema (#...) are followed; not {', '.join(remote)}."]
    return []


def _remote_refs(schema: Any) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for name in ("$ref", "$dynamicRef"):
                ref = item.get(name)
                if isinstance(ref, str) and not ref.startswith("#"):
                    found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@lru_cache(maxsize=256)
def _validator(text: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(text))


def content_problems(schema: dict[str, Any], content: Any) -> dict[str, list[str]]:
    """Each place in `content` that does not fit `schema`, by its path (`content.a[0].b`)."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    problems: dict[str, list[str]] = {}
    try:
        errors = sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    except Unresolvable as exc:  # a schema stored before its $refs were checked
        return {"content": [f"The type's schema cannot be applied: {exc}."]}
    for error in errors:
        where = "content" + _path(error.absolute_path, lead="")
        problems.setdefault(where, []).append(error.message)
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems


def check_content(schemas: Iterable[dict[str, Any] | None], content: Any, *, type: str) -> None:
    """`invalid-fact` naming every path of `content` that a schema of its type refuses."""
    problems: dict[str, list[str]] = {}
    for schema in schemas:
        if schema:
            for where, messages in content_problems(schema, content).items():
                problems.setdefault(where, []).extend(messages)
    if problems:
        raise InvalidFact(
            f"The content does not fit the schema of type {type!r}; see details.",
            details=problems,
        )


def _path(steps: deque[Any] | Iterable[Any], *, lead: str = "the top") -> str:
    text = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
    return text or lead


def validate_content_schema(value: Any) -> None:
    """A Django validator for a stored schema (the write policy's field, the console's form)."""
    from django.core.exceptions import ValidationError

    if value is not None and (problems := schema_problems(value)):
        raise ValidationError(problems, code="invalid-schema")
