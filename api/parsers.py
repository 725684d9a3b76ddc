from __future__ import annotations

import io
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import BaseParser, JSONParser

from api.errors import RequestTooLarge
from api.storable import PROBLEM, unstorable_path

# Deeper bodies are refused before they are parsed. Well under Python's recursion limit (1000),
# so the parse and everything that walks a body afterwards (the search text, json.dumps, DRF's
# renderer where orjson stops at 254) has the rest of the stack for the request's own frames.
MAX_JSON_DEPTH = 256

# a JSON string, escapes included: brackets inside one do not nest
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays and objects more than `limit` deep, read without parsing
    (so without recursion): a body cannot nest deeper than it has opening brackets, and only
    one with more is scanned."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def _dotted(path: list[str | int]) -> str:
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)
    return text.lstrip(".")[:200] or "The body"


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, but a body nested deeper than MAX_JSON_DEPTH is a 400 before it is
    parsed, the same answer at any stack depth (parsing recurses, so where Python's recursion
    limit falls would otherwise depend on the frames below the request), and so is a string
    anywhere in it that PostgreSQL cannot store (api/storable.py): one check for every
    field of every body, free-form JSON (a fact's content and source, a run log's payload)
    included."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = _bounded_read(stream)
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            text = None  # DRF's parser below answers it as it does
        if text is not None and json_depth_exceeds(text):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.")
        try:
            data = super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:  # within the limit, but parsed with the stack nearly spent
            raise ParseError("JSON parse error - nested too deeply.") from None
        path = unstorable_path(data)
        if path is not None:
            # named by its top-level field, as a serializer's own errors are
            field = path[0] if path and isinstance(path[0], str) else "non_field_errors"
            raise ValidationError({field: [f"{_dotted(path)} {PROBLEM}."]})
        return data


class MergePatchParser(BoundedJSONParser):
    """`application/merge-patch+json` (RFC 7386), the body of a PATCH: parsed and checked as
    every JSON body is."""

    media_type = "application/merge-patch+json"


def _bounded_read(stream: Any) -> bytes:
    """The body, at most KINDMEM_MAX_BODY_BYTES of it: the body-size middleware refuses a longer
    declared length, this a stream that brings more than it declared (or declared nothing)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    data = stream.read(limit + 1) if stream is not None else b""
    if len(data) > limit:
        raise RequestTooLarge(
            f"The request body is over the limit of {limit} bytes.",
            details={"limit": limit, "setting": "KINDMEM_MAX_BODY_BYTES"},
        )
    return data


@dataclass(frozen=True)
class RawBody:
    """A body taken as bytes, and the media type it came as."""

    media_type: str
    data: bytes


class _RawParser(BaseParser):
    """The body's bytes as sent (a memory file, an archive of them), at most
    KINDMEM_MAX_BODY_BYTES."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return RawBody(self.media_type, _bounded_read(stream))


class MarkdownParser(_RawParser):
    media_type = "text/markdown"


class ZipParser(_RawParser):
    media_type = "application/zip"
