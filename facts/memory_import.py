"""Memory files imported (`POST /v1/facts/import`): one file, or a zip of `facts/<id>.md` files,
each parsed and checked, then written through the facts write path as the importing credential.

What a file becomes. Its `kind`, `tags`, body (its content, as `provenance.kindmem.body` says:
`text` when there is no such key) and `temporal` (the validity) are the write; so are the
fields of kindmem's extension when the file has one (`key`, `scope`, `subjects`, `observed_at`,
the `keep_days` / `keep_until` / legal hold of its `retention`, and the Kind-B `source`): the
same body `POST /v1/facts` takes, checked by the same serializer. A file without the extension
(another store's) is keyed by its `entityId` when that is not its `id`. The query's scope keys
replace the file's (a `project_id` also its org, which the project decides).

What a file never decides: who wrote it. The new revision is attributed to the importing
credential, its trust is the write's (an agent's run writes `unverified`, and its wide or
instruction-like content waits for review, as any write of its does), its record times are now.
The provenance the file claims (`source`, `by`, kindmem's `attributed_to`, `trust`, `verified_*`,
`generated_by`, `revision`) and its transaction-time fields (`created`, `updated`, `seq`,
`contentHash`, `embeddingRef`) are the other store's record of itself: they are dropped, not
kept in the new revision's `source`. That field is the content's Kind-B source, which dedup
compares (the same content imported from two files would otherwise be two different writes),
and a claim cannot be checked; the import itself is on record in the audit stream (one write
event naming every fact it touched).

Idempotent: a file whose content the scope already holds is `unchanged` (the write path's
content-hash dedup, and the same rule for a keyless fact of an `entity`-deduplicated type, whose
write path never dedups); one that brings something the fact lacks (tags, a retention, subjects,
a source) is that fact's next revision (`superseded`).

All or nothing: every file is parsed and checked before anything is written, and any file that
is refused refuses the import (400 naming the file and the field; a refusal of the write path,
such as a scope the credential may not write into, keeps its own code), with nothing written.
Links between imported facts are made once both ends are (the files' ids mapped to the new
facts'); a link to a fact the import does not bring, or from or to a fact that waits for
review, is dropped and reported.
"""

from __future__ import annotations

import io
import json
import re
import struct
import uuid
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from rest_framework import serializers

from api.errors import FactNotFound, KindmemError, RequestTooLarge, ValidationFailed
from api.fields import StrictSerializer
from api.storable import PROBLEM, unstorable_path
from api.transactions import service_atomic
from facts import services
from facts.link_serializers import LinkCreateInput
from facts.links import link_create
from facts.memory_files import FORMAT, SUFFIX, MemoryFileError, from_epoch_ms, parse_memory_file
from facts.models import DedupScope, Revision, WritePolicy
from facts.provenance import content_hash
from facts.scopes import SCOPE_KEYS, resolve_scope
from facts.serializers import FactCreateInput
from kindmem.access import Principal, readers_for

MARKDOWN = "text/markdown"
ZIP = "application/zip"
# An archive's memory files: `facts/<name>.md` at any depth (both exports write `facts/`);
# macOS's resource forks beside them are not files of the archive.
_ENTRY = re.compile(r"(?:^|.*/)facts/([^/]+)\.md")


@dataclass(frozen=True)
class Uploaded:
    """One memory file of an upload: its name in the archive (None for a file sent alone) and
    its text."""

    name: str | None
    text: str


def _refused(name: str, fields: Mapping[str, Any]) -> ValidationFailed:
    """A file refused: `validation-error` naming it and its fields (the first in the message)."""
    first_field, problems = next(iter(fields.items()))
    problem = problems[0] if isinstance(problems, list) and problems else problems
    return ValidationFailed(
        f"{name}: {first_field}: {problem}", details={"file": name, "fields": dict(fields)}
    )


def uploaded_files(body: bytes, media_type: str) -> list[Uploaded]:
    """The memory files of a request body: one `text/markdown` file, or the `facts/*.md`
    entries of an `application/zip` (its other entries are not memory files), at most
    KINDMEM_MEMORY_FILES_MAX of them and, unpacked, at most KINDMEM_MAX_BODY_BYTES (413
    `request-too-large`, as for the body itself)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if media_type == MARKDOWN:
        return [Uploaded(None, _text(body, "the body"))]
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        entries = [
            info
            for info in archive.infolist()
            if not info.is_dir()
            and _ENTRY.fullmatch(info.filename)
            and not info.filename.startswith("__MACOSX/")
            and not info.filename.rpartition("/")[2].startswith("._")
        ]
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        RuntimeError,  # NotImplementedError: a zip version zipfile does not read
        ValueError,
        OSError,
        struct.error,
    ):
        # a body that is not a zip, or one broken where zipfile reads its directory
        raise ValidationFailed(
            "The body is not a zip archive.", details={"body": ["Not a zip archive."]}
        ) from None
    if not entries:
        raise ValidationFailed(
            "The archive holds no memory files: they are its facts/<id>.md entries.",
            details={"body": ["No facts/<id>.md entry."]},
        )
    most = settings.MEMORY_FILES_MAX
    if len(entries) > most:
        raise RequestTooLarge(
            f"The archive holds {len(entries)} memory files; an import takes at most {most}.",
            details={"files": len(entries), "limit": most},
        )
    unpacked = sum(info.file_size for info in entries)
    if unpacked > limit:
        raise RequestTooLarge(
            f"The archive's memory files unpack to {unpacked} bytes; the limit is {limit}.",
            details={"limit": limit},
        )
    seen: set[str] = set()
    for info in entries:
        if info.filename in seen:
            raise _refused(info.filename, {"file": ["The archive holds two entries of this name."]})
        seen.add(info.filename)
    files = []
    for info in entries:
        try:
            data = archive.read(info)
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            RuntimeError,  # an encrypted entry; NotImplementedError (an unknown compression)
            ValueError,
            OSError,
            struct.error,
        ):
            # a bad CRC, a truncated entry, an encrypted one, an unknown compression
            raise _refused(info.filename, {"file": ["Cannot be read from the archive."]}) from None
        files.append(Uploaded(info.filename, _text(data, info.filename)))
    return files


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(name, {"file": ["Not UTF-8 text."]}) from None


# ---- a file, as a write ----------------------------------------------------------------------


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
    # the other store's record of itself: dropped (module docstring)
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
_WRITE_FIELDS = {
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
        for i, value in enumerate(detail):
            if value:
                out.update(_flat(value, f"{prefix}[{i}]"))
        return out
    return {prefix: [str(d) for d in detail] if isinstance(detail, list) else [str(detail)]}


def _in_file(fields: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
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
        raise _refused(upload.name or "the body", {exc.field: [exc.problem]}) from None
    envelope = parsed.envelope
    name = upload.name or f"{envelope['id']}{SUFFIX}"
    extension = envelope["provenance"].get("kindmem")
    given: dict[str, Any] = {}
    if extension is not None:
        checked = _KindmemExtension(data=extension)
        if not checked.is_valid():
            raise _refused(
                name, {f"{_EXTENSION}.{k}": v for k, v in _flat(checked.errors, "").items()}
            )
        given = {k: v for k, v in checked.validated_data.items() if k in extension}
        key = given.get("key")
        if key is not None and not isinstance(key, str):
            raise _refused(name, {f"{_EXTENSION}.key": ["A string or null."]})
        expected = key if key is not None else envelope["id"]
        if envelope["entityId"] != expected:
            raise _refused(
                name,
                {"entityId": [f"Must be the slot key ({_EXTENSION}.key) or, keyless, the id."]},
            )
        encoding = given["body"]
    else:
        key = envelope["entityId"] if envelope["entityId"] != envelope["id"] else None
        encoding = "text"
    try:
        content = parsed.body if encoding == "text" else json.loads(parsed.body)
    except ValueError as exc:
        raise _refused(name, {"body": [f"Not JSON ({_EXTENSION}.body is json): {exc}"]}) from None
    except RecursionError:
        raise _refused(name, {"body": ["JSON nested too deeply."]}) from None
    if unstorable_path(content) is not None:  # a JSON escape of a lone surrogate, a NUL
        raise _refused(name, {"body": [f"It {PROBLEM}."]})
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
            raise _refused(name, {f"temporal.{bound}": [str(exc)]}) from None
    file_scope = given.get("scope")
    if file_scope is not None and not isinstance(file_scope, dict):
        raise _refused(name, {f"{_EXTENSION}.scope": ["An object."]})
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
        mapping = {**_WRITE_FIELDS, "key": f"{_EXTENSION}.key" if extension else "entityId"}
        raise _refused(name, _in_file(_flat(checked_write.errors, ""), mapping))
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
        raise _refused(name, {f"{_EXTENSION}.retention": ["An object."]})
    unknown = sorted(set(retention) - {"keep_days", "keep_until", "legal_hold", "expires_at"})
    if unknown:
        raise _refused(name, {f"{_EXTENSION}.retention.{unknown[0]}": ["Unknown field."]})
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
        raise _refused(name, {f"{where}.{key}": [str(exc)]}) from None
    checked = _EdgeInput(data=data)
    if not checked.is_valid():
        raise _refused(name, {f"{where}.{k}": v for k, v in _flat(checked.errors, "").items()})
    fields = dict(checked.validated_data)
    return Edge(index, fields.pop("type"), edge["target"], fields)


def import_plan(uploads: Sequence[Uploaded], *, scope: Mapping[str, str]) -> list[Planned]:
    """Every file parsed and checked, nothing written: the first refusal names its file and
    field (`validation-error`). Two files of one import may not share an id."""
    planned = [_plan_one(upload, scope) for upload in uploads]
    seen: dict[str, str] = {}
    for item in planned:
        if item.id in seen:
            raise _refused(item.name, {"id": [f"{seen[item.id]} has this id too."]})
        seen[item.id] = item.name
    return planned


# ---- the writes --------------------------------------------------------------------------


@dataclass(frozen=True)
class FileImported:
    file: str
    id: str  # the file's own id
    outcome: services.Outcome
    fact_id: uuid.UUID
    revision_id: uuid.UUID
    reasons: list[str]
    approval_id: uuid.UUID | None

    @property
    def review(self) -> dict[str, list[str]] | None:
        return {"reasons": self.reasons} if self.reasons else None


@dataclass(frozen=True)
class LinkImported:
    file: str
    type: str
    target: str  # the file's id of the target
    outcome: str  # created | unchanged | dropped
    reason: str | None = None  # dropped: target-not-imported | waits-for-review | not-readable
    link_id: uuid.UUID | None = None
    source_fact_id: uuid.UUID | None = None
    target_fact_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Imported:
    files: list[FileImported]
    links: list[LinkImported]


def _file_error(name: str, exc: KindmemError) -> KindmemError:
    """The write path's refusal of one file, naming the file (its code and status kept)."""
    details: Any = exc.details
    if isinstance(details, Mapping) and all(isinstance(k, str) for k in details):
        details = {"file": name, "fields": _in_file(details, _WRITE_FIELDS)}
    else:
        details = {"file": name, "details": details}
    error = type(exc)(f"{name}: {exc.message}", details=details)
    error.code, error.status_code = exc.code, exc.status_code
    return error


def _entity_repeat(
    principal: Principal,
    write: Mapping[str, Any],
    taken: set[uuid.UUID],
    dedup_scopes: dict[str, str],
) -> Revision | None:
    """For a keyless fact of an `entity`-deduplicated type (whose write path dedups nothing), the
    live fact of the scope with that content that no other file of this import has taken.
    `dedup_scopes` keeps each type's dedup scope for the import (one read per type)."""
    if write.get("key") is not None:
        return None
    if write["type"] not in dedup_scopes:
        policy = (
            WritePolicy.objects.filter(tenant_id=principal.tenant_id, fact_type=write["type"])
            .order_by("pk")
            .first()
        )
        dedup_scopes[write["type"]] = services.dedup_scope_of(policy)
    if dedup_scopes[write["type"]] != DedupScope.ENTITY:
        return None
    resolved = resolve_scope(principal.tenant_id, write.get("scope") or {})
    hash_ = content_hash(write["content"], write.get("valid_from"), write.get("valid_until"))
    return (
        Revision.objects.of_tenant(principal.tenant_id)
        .live()
        .readable_by(readers_for(principal))
        .filter(fact__type=write["type"], fact__key__isnull=True, content_hash=hash_)
        .filter(**{f"fact__{k}": resolved[k] for k in SCOPE_KEYS})
        .exclude(fact_id__in=taken)
        .order_by("pk")
        .first()
    )


def _write(
    principal: Principal, item: Planned, taken: set[uuid.UUID], dedup_scopes: dict[str, str]
) -> services.WriteResult:
    repeat = _entity_repeat(principal, item.write, taken, dedup_scopes)
    if repeat is None:
        return services.fact_create(principal=principal, **item.write)
    again = {k: v for k, v in item.write.items() if k not in {"type", "scope", "key"}}
    return services.fact_supersede(principal=principal, fact_id=repeat.fact_id, **again)


@service_atomic
def facts_import(*, principal: Principal, planned: Sequence[Planned]) -> Imported:
    """Write the planned files as `principal` (`fact_create`, in file order), then the links
    between them; all or nothing (the module docstring)."""
    files: list[FileImported] = []
    new_ids: dict[str, uuid.UUID] = {}
    waiting: set[uuid.UUID] = set()
    taken: set[uuid.UUID] = set()
    dedup_scopes: dict[str, str] = {}
    for item in planned:
        try:
            result = _write(principal, item, taken, dedup_scopes)
        except KindmemError as exc:
            raise _file_error(item.name, exc) from None
        revision = result.revision
        new_ids[item.id] = revision.fact_id
        taken.add(revision.fact_id)
        if result.outcome == services.Outcome.CREATED and result.approval_id is not None:
            waiting.add(revision.fact_id)  # no live revision yet: nothing to link to or from
        files.append(
            FileImported(
                file=item.name,
                id=item.id,
                outcome=result.outcome,
                fact_id=revision.fact_id,
                revision_id=revision.pk,
                reasons=list(result.reasons),
                approval_id=result.approval_id,
            )
        )
    links: list[LinkImported] = []
    for item in planned:
        source = new_ids[item.id]
        for edge in item.edges:
            target = new_ids.get(edge.target)
            said: dict[str, Any] = {"file": item.name, "type": edge.type, "target": edge.target}
            if target is None:
                links.append(LinkImported(**said, outcome="dropped", reason="target-not-imported"))
                continue
            if source in waiting or target in waiting:
                links.append(
                    LinkImported(
                        **said,
                        outcome="dropped",
                        reason="waits-for-review",
                        source_fact_id=source,
                        target_fact_id=target,
                    )
                )
                continue
            try:
                link, created = link_create(
                    principal=principal,
                    source_id=source,
                    target_id=target,
                    type=edge.type,
                    **edge.fields,
                )
            except FactNotFound:
                # an end this import wrote and then lost (a bounded ring's cull evicted it)
                links.append(LinkImported(**said, outcome="dropped", reason="not-readable"))
                continue
            except KindmemError as exc:
                raise _file_error(item.name, exc) from None
            links.append(
                LinkImported(
                    **said,
                    outcome="created" if created else "unchanged",
                    link_id=link.pk,
                    source_fact_id=source,
                    target_fact_id=target,
                )
            )
    return Imported(files=files, links=links)
