"""JSON Merge Patch (RFC 7386) of a fact (seed 003's `IWritePolicy.applyUpdate`: `null` deletes
a key, arrays replace wholesale, objects merge deeply). Which content fields may change (the
type's declared mutable fields) is every write's rule, not the patch's: `facts.authority`.

The algorithm is RFC 7386 section 2's ten lines, written here rather than taken from a package:
the PyPI ones are unmaintained, and none restricts a patch to declared fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rest_framework import serializers

from api.errors import ValidationFailed

# What a patch may change: the fact's content and its validity. Everything else of the fact's
# representation is its identity (id, type, scope, key, version, ...) or its history, written
# by kindmem; retention and subjects change through supersede, under their own rules.
PATCHABLE = ("content", "valid_from", "valid_until")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: `patch` applied to `target` (neither is modified)."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged


@dataclass(frozen=True)
class Patched:
    content: Any
    valid_from: datetime | None
    valid_until: datetime | None


def patched(
    *,
    content: Any,
    valid_from: datetime | None,
    valid_until: datetime | None,
    patch: Any,
) -> Patched:
    """The fact's content and validity after `patch`; `validation-error` naming each field the
    patch may not touch, and nothing applied."""
    if not isinstance(patch, Mapping):
        raise ValidationFailed(
            "A merge patch of a fact is a JSON object.",
            details={"non_field_errors": ['Expected an object such as {"content": {...}}.']},
        )
    problems: dict[str, list[str]] = {}
    for name in patch:
        if name not in PATCHABLE:
            problems[str(name)] = [
                f"Not patchable: a patch changes {', '.join(PATCHABLE)} (retention and"
                " subjects through supersede)."
            ]
    if "content" in patch and patch["content"] is None:
        problems["content"] = ["Required: a fact's content cannot be deleted (delete the fact)."]
    dates = {}
    for name in ("valid_from", "valid_until"):
        if name in patch and patch[name] is not None:
            field = serializers.DateTimeField()
            try:
                dates[name] = field.to_internal_value(patch[name])
            except serializers.ValidationError as exc:
                problems[name] = [str(e) for e in exc.detail]
    if problems:
        raise ValidationFailed("The request is not valid; see details.", details=problems)
    start = dates.get("valid_from") if "valid_from" in patch else valid_from
    end = dates.get("valid_until") if "valid_until" in patch else valid_until
    if start and end and start >= end:
        raise ValidationFailed(
            "The request is not valid; see details.",
            details={"valid_until": ["Must be after valid_from."]},
        )
    new_content = merge_patch(content, patch["content"]) if "content" in patch else content
    return Patched(content=new_content, valid_from=start, valid_until=end)
