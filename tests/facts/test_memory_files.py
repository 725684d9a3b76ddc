"""Memory files (facts/memory_files.py): the seed's format written and read back exactly, every
file kindmem writes accepted by the seed's parsing rules (`tests/oracles.py`), and every file
those rules refuse refused by the import."""

from __future__ import annotations

import copy
import io
import os
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from api.errors import KindmemError, ValidationFailed
from facts.links import link_create
from facts.memory_exports import memory_file_of
from facts.memory_files import (
    FORMAT,
    MemoryFileError,
    content_of,
    epoch_ms,
    from_epoch_ms,
    parse_memory_file,
    serialize_memory_file,
    split_frontmatter,
)
from facts.memory_import_plan import import_plan
from facts.memory_uploads import Uploaded, uploaded_files
from facts.models import Link, Revision
from facts.services import fact_create
from tests.oracles import memory_file_problems

EXAMPLES = int(os.environ.get("KINDMEM_MEMORY_FILE_EXAMPLES", "150"))

# Text PostgreSQL can store (no NUL, no lone surrogate), the dashes and line breaks that could
# pass for a delimiter included.
storable = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
texts = st.text(alphabet=storable, max_size=40) | st.sampled_from(["---", "\n---\n", "a\r\n--- b"])
names = texts.filter(bool)
stems = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,30}[A-Za-z0-9_-]", fullmatch=True)
numbers = st.integers(0, 2**53) | st.floats(0, 4e12, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def provenances(draw: st.DrawFn) -> dict[str, Any]:
    value: dict[str, Any] = {"source": draw(names)}
    if draw(st.booleans()):
        value["by"] = draw(texts)
    if draw(st.booleans()):
        value["confidence"] = draw(st.floats(0, 1))
    if draw(st.booleans()):
        value["kindmem"] = draw(st.dictionaries(texts, json_values, max_size=3))
    return value


@st.composite
def edges(draw: st.DrawFn) -> dict[str, Any]:
    edge: dict[str, Any] = {"type": draw(names), "target": draw(stems)}
    if draw(st.booleans()):
        edge["confidence"] = draw(st.floats(0, 1))
    if draw(st.booleans()):
        edge["provenance"] = draw(provenances())
    if draw(st.booleans()):
        edge["valid_at"] = draw(numbers)
    if draw(st.booleans()):
        edge["invalid_at"] = draw(st.none() | numbers)
    return edge


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "id": draw(stems),
        "entityId": draw(names),
        "kind": draw(names),
        "tags": draw(st.lists(names, max_size=3)),
        "links": draw(st.lists(edges(), max_size=2)),
        "created": draw(numbers),
        "updated": draw(numbers),
        "seq": draw(st.integers(0, 10**6)),
        "contentHash": draw(texts),
        "provenance": draw(provenances()),
    }
    if draw(st.booleans()):
        envelope["temporal"] = draw(
            st.fixed_dictionaries({}, optional={"valid_at": numbers, "invalid_at": numbers})
        )
    if draw(st.booleans()):
        envelope["embeddingRef"] = draw(st.none() | texts)
    return envelope


# ---- the format, written and read back ---------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(envelope=envelopes(), body=st.text(alphabet=storable))
def test_a_memory_file_parses_back_to_the_envelope_and_body_it_was_written_from(envelope, body):
    # given any envelope of the seed's shape and any body (dashes and delimiters included)
    # when it is written as a memory file
    raw = serialize_memory_file(envelope, body)
    # then the seed's rules accept it, and it parses back to exactly what was written
    assert memory_file_problems(raw, envelope["id"]) == []
    parsed = parse_memory_file(raw, stem=envelope["id"])
    assert (parsed.envelope, parsed.body) == (envelope, body)
    # and no line of the frontmatter could be taken for its end
    frontmatter, _ = split_frontmatter(raw)
    assert "---" not in frontmatter.split("\n")


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        ("---\nid: a\n---\n", ""),
        ("---\nid: a\n---\nbody\n---\nmore", "body\n---\nmore"),
        ("---\nid: a\n---\n\n---\n", "\n---\n"),
    ],
)
def test_the_body_is_everything_after_the_first_closing_line(raw, body):
    assert split_frontmatter(raw) == ("id: a", body)


@pytest.mark.parametrize(
    "raw",
    ["id: a\n---\nbody", "\ufeff---\nid: a\n---\n", "---\r\nid: a\r\n---\r\n", "---\nid: a\n"],
)
def test_a_file_without_both_delimiter_lines_is_refused_as_the_seed_refuses_it(raw):
    assert memory_file_problems(raw) == ["frontmatter"]
    with pytest.raises(MemoryFileError) as refused:
        parse_memory_file(raw)
    assert refused.value.field == "frontmatter"


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1900, 1, 1),  # noqa: DTZ001 - the strategy's bounds; made aware below
        max_value=datetime(2099, 12, 31),  # noqa: DTZ001
    )
)
def test_epoch_ms_keeps_every_microsecond(moment):
    moment = moment.replace(tzinfo=UTC)
    ms = epoch_ms(moment)
    assert from_epoch_ms(ms) == moment
    assert isinstance(ms, int) == (moment.microsecond % 1000 == 0)


def test_yaml_that_json_cannot_say_is_refused_naming_the_field():
    base = "---\nid: a\nentityId: a\nkind: k\ntags: []\nlinks: []\n"
    rest = "updated: 1\nseq: 1\ncontentHash: h\nprovenance: {source: agent}\n---\n"
    cases = {
        "created": base + "created: 2024-01-01\n" + rest,  # a YAML date
        "frontmatter": base + "created: &x 1\ncreated2: *x\n" + rest,  # an alias
    }
    for field, raw in cases.items():
        with pytest.raises(MemoryFileError) as refused:
            parse_memory_file(raw, stem="a")
        assert refused.value.field == field, raw
    with pytest.raises(MemoryFileError, match="twice"):
        parse_memory_file(base + "created: 1\ncreated: 2\n" + rest, stem="a")


# ---- what the seed refuses, the import refuses ------------------------------------------------

TOP = ["id", "entityId", "kind", "tags", "links", "created", "updated", "seq", "contentHash"]


def kindmem_file(stem: str = "f-1") -> dict[str, Any]:
    """A file as kindmem exports it, of a fact the import accepts."""
    return {
        "id": stem,
        "entityId": stem,
        "kind": "note",
        "tags": ["a"],
        "links": [{"type": "about", "target": "f-2", "provenance": {"source": "agent"}}],
        "created": 1,
        "updated": 2,
        "seq": 1,
        "contentHash": "h",
        "provenance": {
            "source": "host-ingest",
            "by": "app:x",
            "kindmem": {"format": FORMAT, "body": "text", "key": None, "scope": {}},
        },
        "temporal": {"valid_at": 1_700_000_000_000},
    }


@st.composite
def broken(draw: st.DrawFn) -> tuple[str, str]:
    """A valid file, then one change of the kind a hand or another tool makes."""
    envelope = kindmem_file()
    if draw(st.booleans()):
        del envelope["provenance"]["kindmem"]  # another store's file
    mutation = draw(st.sampled_from(["drop", "add", "retype", "edge", "provenance", "temporal"]))
    value = draw(json_values)
    if mutation == "drop":
        del envelope[draw(st.sampled_from([*TOP, "provenance"]))]
    elif mutation == "add":
        envelope[draw(names.filter(lambda k: k not in envelope))] = value
    elif mutation == "retype":
        envelope[draw(st.sampled_from([*TOP, "provenance", "temporal", "embeddingRef"]))] = value
    elif mutation == "edge":
        key = draw(st.sampled_from(["type", "target", "confidence", "provenance", "valid_at", "x"]))
        envelope["links"][0][key] = value
    elif mutation == "provenance":
        key = draw(st.sampled_from(["source", "by", "model", "confidence", "derivedFrom"]))
        envelope["provenance"][key] = value
    else:
        envelope["temporal"][draw(st.sampled_from(["valid_at", "invalid_at", "x"]))] = value
    raw = serialize_memory_file(envelope, draw(st.text(alphabet=storable, max_size=20)))
    if draw(st.integers(0, 9)) == 0:
        raw = draw(st.sampled_from([raw[4:], raw.replace("\n---\n", "\n--\n"), "\n" + raw]))
    stem = draw(st.sampled_from(["f-1", "f-1", "f-1", "other"]))
    return raw, stem


refused_seen: list[int] = []


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(case=broken())
def test_the_import_refuses_every_file_the_seeds_rules_refuse(case):
    raw, stem = case
    problems = memory_file_problems(raw, stem)
    assume(problems)
    refused_seen.append(1)
    with pytest.raises(ValidationFailed) as refused:
        import_plan([Uploaded(f"facts/{stem}.md", raw)], scope={})
    assert refused.value.details["file"] == f"facts/{stem}.md"
    assert refused.value.details["fields"], refused.value.details


def test_the_refusal_property_saw_many_refused_files():
    assert len(refused_seen) >= EXAMPLES // 2


def test_a_valid_file_is_planned_as_the_write_post_facts_takes():
    # given a kindmem file and another store's file of the same content
    mine = serialize_memory_file(kindmem_file(), "likes tea")
    theirs = copy.deepcopy(kindmem_file("f-2"))
    theirs["entityId"] = "person/ana"
    del theirs["provenance"]["kindmem"]
    # when they are planned
    planned = import_plan(
        [
            Uploaded("facts/f-1.md", mine),
            Uploaded("x/facts/f-2.md", serialize_memory_file(theirs, "b")),
        ],
        scope={},
    )
    # then each is the write of its content, validity and tags; the other store's is keyed by
    # its entity
    first, second = planned
    assert first.write["content"] == "likes tea"
    assert first.write["valid_from"] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert (first.write["key"], second.write["key"]) == (None, "person/ana")
    assert [(e.type, e.target) for e in first.edges] == [("about", "f-2")]


# ---- every file kindmem writes passes --------------------------------------------------------


class Rollback(Exception):
    pass


contents = st.one_of(
    st.text(alphabet=storable, min_size=1, max_size=60),
    st.dictionaries(st.text(alphabet=storable, max_size=8), json_values, min_size=1, max_size=4),
    st.lists(json_values, min_size=1, max_size=4),
)
moments = st.datetimes(
    min_value=datetime(2000, 1, 1),  # noqa: DTZ001 - made aware below
    max_value=datetime(2090, 1, 1),  # noqa: DTZ001
).map(lambda d: d.replace(tzinfo=UTC))


@pytest.mark.django_db
@settings(
    max_examples=int(os.environ.get("KINDMEM_MEMORY_FILE_DB_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    content=contents,
    tags=st.lists(st.text(alphabet=storable, min_size=1, max_size=20), max_size=3),
    key=st.none() | st.text(alphabet=storable, min_size=1, max_size=20),
    valid_from=st.none() | moments,
    source=st.none() | st.fixed_dictionaries({"kind": names}, optional={"ref": texts}),
    link_provenance=json_values,
    confidence=st.none() | st.floats(0, 1),
)
def test_every_file_kindmem_writes_passes_the_seeds_rules_and_reads_back_its_content(
    world, content, tags, key, valid_from, source, link_provenance, confidence
):
    try:
        with transaction.atomic():
            # given a fact written through the write path, linked to another
            scope = {"project_id": str(world.project.id), "participant_id": "p-1"}
            written = fact_create(
                principal=world.app.principal,
                type="note",
                content=content,
                scope=scope,
                key=key,
                tags=tags,
                valid_from=valid_from,
                valid_until=valid_from + timedelta(microseconds=1) if valid_from else None,
                source=source,
            ).revision
            other = fact_create(
                principal=world.app.principal, type="note", content="other", scope=scope
            ).revision
            link_create(
                principal=world.app.principal,
                source_id=written.fact_id,
                target_id=other.fact_id,
                type="about",
                confidence=confidence,
                provenance=link_provenance,
            )
            revision = (
                Revision.objects.select_related("fact")
                .prefetch_related("subjects")
                .get(pk=written.pk)
            )
            # when it is written as a memory file
            raw = memory_file_of(revision, Link.objects.filter(source_id=written.fact_id), seq=1)
            # then the seed's rules accept it, and it reads back to the fact
            assert memory_file_problems(raw, str(written.fact_id)) == []
            parsed = parse_memory_file(raw, stem=str(written.fact_id))
            extension = parsed.envelope["provenance"]["kindmem"]
            assert content_of(parsed.body, extension["body"]) == revision.content
            assert parsed.envelope["entityId"] == (key or str(written.fact_id))
            [edge] = parsed.envelope["links"]
            [link] = Link.objects.filter(source_id=written.fact_id)  # as jsonb holds it
            assert edge["provenance"]["kindmem"] == {"provenance": link.provenance}
            assert edge.get("confidence") == confidence
            # and the import plans exactly that write
            [planned] = import_plan([Uploaded(f"facts/{written.fact_id}.md", raw)], scope={})
            assert planned.write["content"] == revision.content
            assert planned.write.get("valid_from") == revision.valid_from
            assert planned.write.get("valid_until") == revision.valid_until
            assert planned.write.get("source") == revision.source
            raise Rollback
    except Rollback:
        pass


# ---- nothing but a refusal -------------------------------------------------------------------

TRICKY = [
    "created: 2024-13-45",
    "a: !!binary aGk=",
    "a: !!int 0xZZ",
    "a: !!python/name:os.system",
    "a: &x [1, 2]",
    "b: *x",
    "<<: {a: 1}",
    "? [a, b]",
    ": c",
    "a: .inf",
    "a: ~",
    "a: 'unterminated",
    "- item",
    "%TAG ! tag:x,2000:",
    "a: [" * 40,
    "a: " + "[" * 3000,
    "id: " + "{a: " * 2000,
    "provenance: {source: agent, kindmem: {format: kindmem.memory-file/1, body: json}}",
    "provenance: {source: agent, kindmem: 5}",
    "links: [{type: t, target: x, valid_at: 1e400}]",
    "temporal: {valid_at: 99999999999999999999999}",
    "temporal: {valid_at: -99999999999999}",
    "kind: note",
    "id: a",
    "entityId: a",
    "tags: []",
    "links: []",
    "created: 1",
    "updated: 1",
    "seq: 1",
    'contentHash: ""',
]


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(
    lines=st.lists(st.sampled_from(TRICKY) | st.text(alphabet=storable, max_size=30), max_size=14),
    body=st.sampled_from(["", "[" * 5000, '"\\ud800"', '{"a": "\\u0000"}', "1e999", "null"])
    | st.text(max_size=30),
)
def test_whatever_a_file_holds_the_import_answers_with_a_refusal_or_a_plan(lines, body):
    raw = "---\n" + "\n".join(lines) + "\n---\n" + body
    refused: KindmemError | None = None
    try:
        import_plan([Uploaded("facts/a.md", raw)], scope={})
    except KindmemError as exc:
        refused = exc
    # (anything else, a bug, fails the test: never a 500)
    if refused is not None:
        assert refused.status_code == 400
        assert set(refused.details) == {"file", "fields"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("[" * 100_000, "JSON nested deeper than 256 levels."),
        ('"\\ud800"', "It contains a NUL character or a lone surrogate, which cannot be stored."),
        ("1e999", "Value must be valid JSON."),
    ],
)
def test_a_json_body_postgresql_cannot_hold_is_refused_naming_the_body(body, problem):
    envelope = kindmem_file()
    envelope["provenance"]["kindmem"]["body"] = "json"
    with pytest.raises(ValidationFailed) as refused:
        import_plan([Uploaded("facts/f-1.md", serialize_memory_file(envelope, body))], scope={})
    assert refused.value.details["fields"] == {"body": [problem]}


def _archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("facts/f-1.md", serialize_memory_file(kindmem_file(), "likes tea"))
        archive.writestr("facts/f-2.md", serialize_memory_file(kindmem_file("f-2"), "b" * 300))
    return buffer.getvalue()


ARCHIVE = _archive()


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.integers(0, len(ARCHIVE) - 1), st.integers(0, 255)), min_size=1, max_size=6
    ),
    cut=st.none() | st.integers(0, len(ARCHIVE)),
)
def test_a_broken_archive_is_refused_never_a_crash(changes, cut):
    # given a valid archive with a few bytes changed, or cut short
    data = bytearray(ARCHIVE)
    for at, byte in changes:
        data[at] = byte
    data = data[:cut] if cut is not None else data
    # when its files are read and planned, then the answer is files or a refusal
    try:
        import_plan(uploaded_files(bytes(data), "application/zip"), scope={})
    except KindmemError as refused:
        assert refused.status_code in {400, 413, 415}  # noqa: PT017 - any refusal, not one raise


@pytest.mark.parametrize(
    "tags",
    [
        "[" * 30_000 + "]" * 30_000,  # flow sequences: PyYAML's scanner costs their square
        "{a: " * 300 + "1" + "}" * 300,
        "\n" + "".join("  " * depth + "-\n" for depth in range(300)),  # block sequences
    ],
)
def test_frontmatter_nested_deeper_than_a_json_body_may_be_is_refused_before_it_is_parsed(tags):
    # given: a memory file whose frontmatter nests deeper than a JSON body may (256)
    raw = f"---\nid: f-1\ntype: note\ntags: {tags}\n---\nlikes tea\n"
    # then: it is refused, naming the frontmatter and the bound
    with pytest.raises(MemoryFileError) as refused:
        parse_memory_file(raw, stem="f-1")
    assert str(refused.value.problem) == "Nested deeper than 256 levels."


def test_brackets_inside_a_quoted_string_or_a_word_are_not_nesting():
    # an apostrophe in a word opens no string, and brackets in a quoted one are text
    tags = "['it''s " + "[" * 300 + "']"
    raw = (
        f"---\nid: a\nentityId: a\nkind: k\ntags: {tags}\nlinks: []\ncreated: 1\nupdated: 1\n"
        "seq: 1\ncontentHash: h\nprovenance: {source: it's an agent}\n---\nit's tea\n"
    )
    parsed = parse_memory_file(raw, stem="a")
    assert parsed.envelope["tags"] == ["it's " + "[" * 300]
