"""Each memory file of an import checked as the write it asks for (`Planned`: `fact_create`'s
arguments and the links it asks for), nothing written; the first refusal names its file and
field. What a file never decides is facts/memory_import.py's docstring.

What a file becomes. Its `kind`, `tags`, body (its content, as `provenance.kindmem.body` says:
`text` when there is no such key) and `temporal` (the validity) are the write; so are the
fields of kindmem's extension when the file has one (`key`, `scope`, `subjects`, `observed_at`,
the `keep_days` / `keep_until` / legal hold of its `retention`, and the Kind-B `source`): the
same body `POST /v1/facts` takes, checked by the same serializer. A file without the extension
(another store's) is keyed by its `entityId` when that is not its `id`. The query's scope keys
replace the file's (a `project_id` also its org, which the project decides).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rest_framework import serializers

from api.fields import StrictSerializer
from api.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from api.storable import PROBLEM, unstorable_path
from facts.link_serializers import LinkCreateInput
from facts.memory_files import FORMAT, SUFFIX, MemoryFileError, from_epoch_ms, parse_memory_file
from facts.memory_uploads import Uploaded, refused
from facts.serializers import FactCreateInput


class _KindmemExtension(StrictSerializer):
    """`provenance.kindmem` as kindmem writes it. What the write takes is passed on as it is, to
    be checked as `POST /v1/facts` checks it; the rest is the other store's record, accepted
    and dropped."""

    format = serializers.ChoiceField(choices=[FORMAT])
    body = serializers.ChoiceField(choices=["text", "json"])
    key = serializers.JSONField(required=False, allow_null=True)
    scope = serializers.JSONField(required=False)
    subjects = serializers.JSONField(required=False)
    observed_at = serializers.JSONField(required=False, allow_null=True)
    retention = serializers.JSONField(required=False)
    source = serializers.JSONField(required=False, allow_null=True)  # type: ignore[assignment]
    # the other store's record of itself: dropped (facts/memory_import.py)
    trust = serializers.JSONField(required=False, allow_null=True)
    verified_by = serializers.JSONField(required=False, allow_null=True)
    verified_at = serializers.JSONField(required=False, allow_null=True)
    attributed_to = serializers.JSONField(required=False, allow_null=True)
    generated_by = serializers.JSONField(required=False, allow_null=True)
    revision = serializers.JSONField(required=False, allow_null=True)


class _EdgeInput(LinkCreateInput):
    """An IEdge as `POST /v1/facts/{id}/links` checks a link (its target is the file's id of
    another file of the import)."""

    target = None  # type: ignore[assignment]


# Where each field of the write comes from in the file, for an error to name it.
_EXTENSION = "provenance.kindmem"
WRITE_FIELDS = {
    "type": "kind",
    "content": "body",
    "tags": "tags",
    "key": f"{_EXTENSION}.key",
    "scope": f"{_EXTENSION}.scope",
    "subjects": f"{_EXTENSION}.subjects",
    "valid_from": "temporal.valid_at",
    "valid_until": "temporal.invalid_at",
    "observed_at": f"{_EXTENSION}.observed_at",
    "retention": f"{_EXTENSION}.retention",
    "source": f"{_EXTENSION}.source",
}


def _flat(detail: Any, prefix: str) -> dict[str, list[str]]:
    """DRF's nested errors as dotted paths (`scope.project_id`, `subjects[1].kind`)."""
    if isinstance(detail, Mapping):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(detail, list) and detail and not all(isinstance(d, str) for d in detail):
        out = {}
        for index, value in enumerate(detail):
            if value:
                out.update(_flat(value, f"{prefix}[{index}]"))
        return out
    return {prefix: [str(d) for d in detail] if isinstance(detail, list) else [str(detail)]}


def in_file(fields: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """Errors named as the write names its fields, renamed as the file names them."""
    renamed: dict[str, Any] = {}
    for path, problems in fields.items():
        head, rest = _HEAD.match(path).groups()  # type: ignore[union-attr]  # matches any text
        renamed[mapping.get(head, head) + rest] = problems
    return renamed


_HEAD = re.compile(r"([^.\[]*)(.*)", re.DOTALL)


@dataclass(frozen=True)
class Edge:
    """A link a file asks for: to another file of the import, by that file's id."""

    index: int
    type: str
    target: str
    fields: dict[str, Any]  # confidence, provenance, valid_at, invalid_at (checked)


@dataclass(frozen=True)
class Planned:
    """One file, checked, as the write it asks for."""

    name: str
    id: str
    write: dict[str, Any]  # `fact_create`'s keyword arguments (FactCreateInput.service_kwargs)
    edges: list[Edge] = field(default_factory=list)


def _time(value: Any) -> datetime | None:
    return None if value is None else from_epoch_ms(value)


def _plan_one(upload: Uploaded, scope: Mapping[str, str]) -> Planned:
    stem = None
    if upload.name is not None:
        stem = upload.name.rpartition("/")[2].removesuffix(SUFFIX)
    try:
        parsed = parse_memory_file(upload.text, stem=stem)
    except MemoryFileError as exc:
        raise refused(upload.name or "the body", {exc.field: [exc.problem]}) from None
    envelope = parsed.envelope
    name = upload.name or f"{envelope['id']}{SUFFIX}"
    extension = envelope["provenance"].get("kindmem")
    given: dict[str, Any] = {}
    if extension is not None:
        checked = _KindmemExtension(data=extension)
        if not checked.is_valid():
            raise refused(
                name, {f"{_EXTENSION}.{k}": v for k, v in _flat(checked.errors, "").items()}
            )
        given = {k: v for k, v in checked.validated_data.items() if k in extension}
        key = given.get("key")
        if key is not None and not isinstance(key, str):
            raise refused(name, {f"{_EXTENSION}.key": ["A string or null."]})
        expected = key if key is not None else envelope["id"]
        if envelope["entityId"] != expected:
            raise refused(
                name,
                {"entityId": [f"Must be the slot key ({_EXTENSION}.key) or, keyless, the id."]},
            )
        encoding = given["body"]
    else:
        key = envelope["entityId"] if envelope["entityId"] != envelope["id"] else None
        encoding = "text"
    if encoding == "json" and json_depth_exceeds(parsed.body):
        # the limit of a JSON request body: a content no route would accept is not imported
        raise refused(name, {"body": [f"JSON nested deeper than {MAX_JSON_DEPTH} levels."]})
    try:
        content = parsed.body if encoding == "text" else json.loads(parsed.body)
    except ValueError as exc:
        raise refused(name, {"body": [f"Not JSON ({_EXTENSION}.body is json): {exc}"]}) from None
    except RecursionError:
        raise refused(name, {"body": ["JSON nested too deeply."]}) from None
    if unstorable_path(content) is not None:  # a JSON escape of a lone surrogate, a NUL
        raise refused(name, {"body": [f"It {PROBLEM}."]})
    temporal = envelope.get("temporal", {})
    write: dict[str, Any] = {
        "type": envelope["kind"],
        "content": content,
        "tags": envelope["tags"],
        "key": key,
    }
    for bound, column in (("valid_at", "valid_from"), ("invalid_at", "valid_until")):
        try:
            write[column] = _time(temporal.get(bound))
        except ValueError as exc:
            raise refused(name, {f"temporal.{bound}": [str(exc)]}) from None
    file_scope = given.get("scope")
    if file_scope is not None and not isinstance(file_scope, dict):
        raise refused(name, {f"{_EXTENSION}.scope": ["An object."]})
    merged = _scoped(file_scope or {}, scope)
    if merged:
        write["scope"] = merged
    for name_ in ("subjects", "observed_at", "source"):
        if name_ in given:
            write[name_] = given[name_]
    if "retention" in given:
        write["retention"] = _retention(name, given["retention"])
    checked_write = FactCreateInput(data=write)
    if not checked_write.is_valid():
        mapping = {**WRITE_FIELDS, "key": f"{_EXTENSION}.key" if extension else "entityId"}
        raise refused(name, in_file(_flat(checked_write.errors, ""), mapping))
    edges = [_edge(name, i, edge) for i, edge in enumerate(envelope["links"])]
    return Planned(name, envelope["id"], checked_write.service_kwargs(), edges)


def _scoped(file_scope: Mapping[str, Any], query: Mapping[str, str]) -> dict[str, Any]:
    """The file's scope with the query's keys in its place; a project given on the query
    decides the org as well (the file's org is the other tenant's)."""
    merged = {k: v for k, v in file_scope.items() if v is not None}
    if "project_id" in query and "org_id" not in query:
        merged.pop("org_id", None)
    merged.update(query)
    return merged


def _retention(name: str, retention: Any) -> dict[str, Any]:
    """The retention the file's fact had (what forbids its deletion, and when it expires),
    as a write's override: its `expires_at` is the write's to compute, and a legal hold not set
    is left to the tenant's policy rather than written as "no hold"."""
    if not isinstance(retention, dict):
        raise refused(name, {f"{_EXTENSION}.retention": ["An object."]})
    unknown = sorted(set(retention) - {"keep_days", "keep_until", "legal_hold", "expires_at"})
    if unknown:
        raise refused(name, {f"{_EXTENSION}.retention.{unknown[0]}": ["Unknown field."]})
    kept = {k: v for k, v in retention.items() if k != "expires_at" and v is not None}
    if kept.get("legal_hold") is False:
        del kept["legal_hold"]
    return kept


def _edge(name: str, index: int, edge: Mapping[str, Any]) -> Edge:
    where = f"links[{index}]"
    provenance = edge.get("provenance")
    # kindmem's own export keeps the link's provenance under the extension key; another
    # store's IProvenance is the link's provenance as its writer gave it
    if isinstance(provenance, dict) and isinstance(provenance.get("kindmem"), dict):
        provenance = provenance["kindmem"].get("provenance")
    data: dict[str, Any] = {"type": edge["type"], "provenance": provenance}
    if "confidence" in edge:
        data["confidence"] = edge["confidence"]
    try:
        for key in ("valid_at", "invalid_at"):
            if edge.get(key) is not None:
                data[key] = from_epoch_ms(edge[key])
    except ValueError as exc:
        raise refused(name, {f"{where}.{key}": [str(exc)]}) from None
    checked = _EdgeInput(data=data)
    if not checked.is_valid():
        raise refused(name, {f"{where}.{k}": v for k, v in _flat(checked.errors, "").items()})
    fields = dict(checked.validated_data)
    return Edge(index, fields.pop("type"), edge["target"], fields)


def import_plan(uploads: Sequence[Uploaded], *, scope: Mapping[str, str]) -> list[Planned]:
    """Every file parsed and checked, nothing written: the first refusal names its file and
    field (`validation-error`). Two files of one import may not share an id."""
    planned = [_plan_one(upload, scope) for upload in uploads]
    seen: dict[str, str] = {}
    for item in planned:
        if item.id in seen:
            raise refused(item.name, {"id": [f"{seen[item.id]} has this id too."]})
        seen[item.id] = item.name
    return planned
