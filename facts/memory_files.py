"""Memory files in the 003 seed's own format (`@fgv/ts-agent-memory`),
`---\\n<yaml>\\n---\\n<body>`, written and read back.

The frontmatter is exactly the seed's `IMemoryEnvelope` and nothing else at its top level: `id`
(the file's stem: the fact's id), `entityId` (the slot key, else the id), `kind` (the fact's
type), `tags`, `links` (`IEdge`: `type`, `target`, `confidence?`, `provenance?`, `valid_at?`,
`invalid_at?`), `created`, `updated`, `seq`, `contentHash`, `provenance` (`IProvenance`:
`source` is `agent` for an agent's run, `human` for a Kindgi user, `host-ingest` for an app or
admin key; `by` the writer), `temporal?` (`ITemporalBlock`, from the revision's validity) and
`embeddingRef?`. Every time is epoch milliseconds, exact to the microsecond (a fraction when it
is not a whole millisecond), so a revision's validity, which its content hash covers, survives
the round trip.

kindmem's own fields ride in the one extension key `provenance.kindmem` (IProvenance admits any
extra key), as kindmem's API names them (snake_case, ISO 8601 times): `format`, `body` (how the
body holds the content: `text`, the string itself, or `json`, a JSON rendering that parses back
to the same value), `key`, `scope`, `subjects`, `trust`, `verified_by`/`verified_at`,
`attributed_to`, `generated_by`, `revision` (id, version, whether it is the fact's current one,
its review and why it ended), `observed_at`, `retention` and the Kind-B `source`.

`parse_memory_file` reverses `serialize_memory_file` exactly, and checks the envelope field by
field against the seed's declared types (`MemoryFileError` names the field). This module is the
format alone; a fact's revision as a file is facts/memory_exports.py's, a parsed file as a
write facts/memory_import_plan.py's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from api.parsers import MAX_JSON_DEPTH
from api.storable import PROBLEM, unstorable_path

FORMAT = "kindmem.memory-file/1"
OPEN = "---\n"
CLOSE = "\n---\n"
SUFFIX = ".md"
FOLDER = "facts"  # an archive's memory files are its `facts/<id>.md` entries

ENVELOPE_REQUIRED = (
    "id",
    "entityId",
    "kind",
    "tags",
    "links",
    "created",
    "updated",
    "seq",
    "contentHash",
    "provenance",
)
ENVELOPE_OPTIONAL = ("temporal", "embeddingRef")
EDGE_KEYS = ("type", "target", "confidence", "provenance", "valid_at", "invalid_at")
TEMPORAL_KEYS = ("valid_at", "invalid_at")

# assertPortableFilenameStem: the POSIX portable filename set, no leading or trailing dot
_PORTABLE = re.compile(r"[A-Za-z0-9._-]+")
_WINDOWS_DEVICES = re.compile(r"(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(\..*)?", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class MemoryFileError(ValueError):
    """A memory file that is not one: `field` names where (`links[0].target`, `frontmatter`)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class MemoryFile:
    """One parsed memory file: its envelope (checked) and its body as written."""

    envelope: dict[str, Any]
    body: str


# ---- times and bodies ------------------------------------------------------------------------


def epoch_ms(value: datetime) -> int | float:
    """Epoch milliseconds: an int for a whole millisecond, else the exact microseconds as a
    fraction (a float holds them exactly for any time before the year 2100 or so)."""
    micros = (value - _EPOCH) // timedelta(microseconds=1)
    return micros // 1000 if micros % 1000 == 0 else micros / 1000


def from_epoch_ms(value: int | float) -> datetime:
    """The instant `epoch_ms` wrote (ValueError for one outside the calendar)."""
    micros = value * 1000 if isinstance(value, int) else round(value * 1000)
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise ValueError("Not a time between the years 1 and 9999.") from None


def body_of(content: Any) -> tuple[str, str]:
    """The body for a content and how it holds it: a string verbatim (`text`), anything else
    as a JSON rendering that parses back to the same value (`json`)."""
    if isinstance(content, str):
        return content, "text"
    return json.dumps(content, ensure_ascii=False, indent=2) + "\n", "json"


def content_of(body: str, encoding: str) -> Any:
    """`body_of` reversed (ValueError for a `json` body that is not JSON)."""
    if encoding == "text":
        return body
    return json.loads(body)


# ---- the file: split, join, YAML -------------------------------------------------------------


def split_frontmatter(raw: str) -> tuple[str, str]:
    """The seed's `splitFrontmatter`: the YAML between an opening `---\\n` and the first
    `\\n---\\n` after it, and everything after that, verbatim."""
    if not raw.startswith(OPEN):
        raise MemoryFileError("frontmatter", "A memory file starts with a line `---`.")
    end = raw.find(CLOSE, len(OPEN) - 1)
    if end < 0:
        raise MemoryFileError("frontmatter", "No closing `---` line after the frontmatter.")
    return raw[len(OPEN) : max(end, len(OPEN))], raw[end + len(CLOSE) :]


def join_frontmatter(frontmatter: str, body: str) -> str:
    """The seed's `joinFrontmatter`."""
    return f"{OPEN}{frontmatter}{CLOSE}{body}"


class _Dumper(yaml.SafeDumper):
    """Block YAML on one line per scalar: a string with a line break (or anything not
    printable) double-quoted with escapes, so no line of the frontmatter can be `---`."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    text = str.__str__(data)  # a model's choice (a str enum) as its plain value
    quoted = not text.isprintable() or any(c in text for c in "\n\r\x85\u2028\u2029")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style='"' if quoted else None)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_multi_representer(str, _represent_str)


class _TooDeep(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """Safe YAML, and none of what JSON cannot say: no aliases (a few lines expanding to an
    exponential structure), no key twice in one mapping (which the last would win silently),
    nothing nested deeper than a JSON body may be (refused as the node that passes it is
    composed: `[[[[...` costs its first levels, not a recursion to the interpreter's limit)."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("Aliases (*name) are not accepted in a memory file.")
        self.depth += 1
        try:
            if self.depth > MAX_JSON_DEPTH:
                raise _TooDeep
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str) and key in seen:
                raise yaml.YAMLError(f"The key {key!r} appears twice in one mapping.")
            seen.add(key if isinstance(key, str) else id(key_node))
        return super().construct_mapping(node, deep=deep)


def _flow_depth_exceeds(text: str, limit: int) -> bool:
    """Whether `text`'s flow collections (`[`, `{`) open deeper than `limit`, outside quoted
    strings: one pass, before PyYAML's scanner, whose bookkeeping per open flow level makes
    `[[[[...` cost the square of its depth (30,000 levels: seconds of a worker). A quote opens
    a string only where YAML's would (a token's start), so `it's` hides nothing; an escaped
    quote is taken for the end (the count errs towards refusing)."""
    depth = 0
    quote = ""
    closed = ""  # the quote that just closed a string: doubled ('') it is one inside it
    previous = "\n"
    for char in text:
        if quote:
            if char == quote:
                quote, closed = "", char
                previous = char
                continue
        elif char in "'\"" and (previous.isspace() or previous in ":,[{-?" or char == closed):
            quote = char
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth = max(depth - 1, 0)
        previous, closed = char, ""
    return False


def serialize_memory_file(envelope: Mapping[str, Any], body: str) -> str:
    """The seed's `serializeMemoryFile`: the envelope as YAML frontmatter, the body verbatim."""
    frontmatter = yaml.dump(
        dict(envelope),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=math.inf,
        default_flow_style=False,
    )
    return join_frontmatter(frontmatter.rstrip("\n"), body)


def parse_memory_file(raw: str, *, stem: str | None = None) -> MemoryFile:
    """The seed's `parseMemoryFile` up to the body: split, the YAML read, the envelope checked
    (its `id` must be `stem`, the file's name without `.md`, when there is one)."""
    frontmatter, body = split_frontmatter(raw)
    if _flow_depth_exceeds(frontmatter, MAX_JSON_DEPTH):
        raise MemoryFileError("frontmatter", f"Nested deeper than {MAX_JSON_DEPTH} levels.")
    try:
        value = yaml.load(frontmatter, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise MemoryFileError("frontmatter", f"Not YAML: {_first_line(exc)}") from None
    except (RecursionError, _TooDeep):
        raise MemoryFileError(
            "frontmatter", f"Nested deeper than {MAX_JSON_DEPTH} levels."
        ) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # a value YAML's own types cannot hold (a timestamp of month 13, ...)
        raise MemoryFileError("frontmatter", f"Not YAML: {_first_line(exc)}") from None
    return MemoryFile(envelope=check_envelope(value, stem=stem), body=body)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__


# ---- the envelope, checked -------------------------------------------------------------------


def _json_like(value: Any, path: str) -> None:
    """Only what JSON can say (YAML can say more: dates, sets, binary, non-string keys), and
    only text PostgreSQL can keep."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise MemoryFileError(where, "Every key is a string.")
                stack.append((child, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise MemoryFileError(where, "Not a finite number.")
        elif not (item is None or isinstance(item, str | int | bool)):
            raise MemoryFileError(where, f"Not a JSON value (YAML {type(item).__name__}).")
    unstorable = unstorable_path(value)
    if unstorable is not None:
        steps = (f"[{s}]" if isinstance(s, int) else f".{s}" for s in unstorable)
        field = "".join(steps).lstrip(".")
        raise MemoryFileError(field or "frontmatter", f"It {PROBLEM}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _brand(value: Any, field: str) -> str:
    """The seed's branded strings (MemoryId, EntityId, Kind, Tag, LinkType): non-empty text."""
    if not isinstance(value, str) or not value:
        raise MemoryFileError(field, "A non-empty string.")
    return value


def _number(value: Any, field: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not _is_number(value):
        raise MemoryFileError(field, "A number (epoch ms).")


def _confidence(value: Any, field: str) -> None:
    if not _is_number(value) or not 0.0 <= value <= 1.0:
        raise MemoryFileError(field, "A number in [0, 1].")


def is_portable_stem(stem: str) -> bool:
    """The seed's `assertPortableFilenameStem`."""
    return (
        bool(_PORTABLE.fullmatch(stem))
        and not stem.startswith(".")
        and not stem.endswith(".")
        and not _WINDOWS_DEVICES.fullmatch(stem)
    )


def _provenance(value: Any, field: str) -> None:
    """IProvenance: `source` a string; `by`, `model`, `derivedFrom` strings, `confidence` in
    [0, 1] where given; any other key kept as it is."""
    if not isinstance(value, dict):
        raise MemoryFileError(field, "An object (IProvenance).")
    if not isinstance(value.get("source"), str) or not value["source"]:
        raise MemoryFileError(f"{field}.source", "A non-empty string (ProvenanceSource).")
    for name in ("by", "model"):
        if name in value and not isinstance(value[name], str):
            raise MemoryFileError(f"{field}.{name}", "A string.")
    if "derivedFrom" in value:
        _brand(value["derivedFrom"], f"{field}.derivedFrom")
    if "confidence" in value:
        _confidence(value["confidence"], f"{field}.confidence")


def _unknown(value: dict[str, Any], known: Sequence[str], field: str) -> None:
    extra = sorted(set(value) - set(known))
    if extra:
        where = f"{field}.{extra[0]}" if field else extra[0]
        raise MemoryFileError(where, f"Not a field of {_SHAPES.get(field, 'IMemoryEnvelope')}.")


_SHAPES = {"temporal": "ITemporalBlock"}


def check_envelope(value: Any, *, stem: str | None = None) -> dict[str, Any]:
    """`value` (parsed YAML) as an IMemoryEnvelope, checked field by field against the seed's
    declared types; an unknown top-level key, or one in an IEdge or the temporal block, is
    refused (only IProvenance admits extra keys)."""
    if not isinstance(value, dict):
        raise MemoryFileError("frontmatter", "The frontmatter is a mapping (IMemoryEnvelope).")
    _json_like(value, "")
    _unknown(value, ENVELOPE_REQUIRED + ENVELOPE_OPTIONAL, "")
    for name in ENVELOPE_REQUIRED:
        if name not in value:
            raise MemoryFileError(name, "Required.")
    _brand(value["id"], "id")
    if not is_portable_stem(value["id"]):
        raise MemoryFileError("id", "A portable filename stem ([A-Za-z0-9._-], no edge dot).")
    if stem is not None and value["id"] != stem:
        raise MemoryFileError("id", f"Must equal the file's name without .md ({stem!r}).")
    _brand(value["entityId"], "entityId")
    _brand(value["kind"], "kind")
    if not isinstance(value["tags"], list):
        raise MemoryFileError("tags", "A list of strings.")
    for index, tag in enumerate(value["tags"]):
        _brand(tag, f"tags[{index}]")
    if not isinstance(value["links"], list):
        raise MemoryFileError("links", "A list of IEdge.")
    for index, edge in enumerate(value["links"]):
        _edge(edge, f"links[{index}]")
    for name in ("created", "updated", "seq"):
        _number(value[name], name)
    if not isinstance(value["contentHash"], str):
        raise MemoryFileError("contentHash", "A string.")
    _provenance(value["provenance"], "provenance")
    if "temporal" in value:
        temporal = value["temporal"]
        if not isinstance(temporal, dict):
            raise MemoryFileError("temporal", "An object (ITemporalBlock).")
        _unknown(temporal, TEMPORAL_KEYS, "temporal")
        if "valid_at" in temporal:
            _number(temporal["valid_at"], "temporal.valid_at")
        if "invalid_at" in temporal:
            _number(temporal["invalid_at"], "temporal.invalid_at", nullable=True)
    if "embeddingRef" in value and not (
        value["embeddingRef"] is None or isinstance(value["embeddingRef"], str)
    ):
        raise MemoryFileError("embeddingRef", "A string or null.")
    return value


def _edge(edge: Any, field: str) -> None:
    if not isinstance(edge, dict):
        raise MemoryFileError(field, "An object (IEdge).")
    extra = sorted(set(edge) - set(EDGE_KEYS))
    if extra:
        raise MemoryFileError(f"{field}.{extra[0]}", "Not a field of IEdge.")
    for name in ("type", "target"):
        if name not in edge:
            raise MemoryFileError(f"{field}.{name}", "Required.")
        _brand(edge[name], f"{field}.{name}")
    if "confidence" in edge:
        _confidence(edge["confidence"], f"{field}.confidence")
    if "provenance" in edge:
        _provenance(edge["provenance"], f"{field}.provenance")
    if "valid_at" in edge:
        _number(edge["valid_at"], f"{field}.valid_at")
    if "invalid_at" in edge:
        _number(edge["invalid_at"], f"{field}.invalid_at", nullable=True)
