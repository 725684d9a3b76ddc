from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import BaseParser, JSONParser

from kindmem.errors import RequestTooLarge
from kindmem.storable import PROBLEM, unstorable_path


def _dotted(path: list[str | int]) -> str:
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)
    return text.lstrip(".")[:200] or "The body"


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, but a body nested deeper than Python can recurse is a 400, not a 500,
    and so is a string anywhere in it that PostgreSQL cannot store (kindmem/storable.py): one
    check for every field of every body, free-form JSON (a fact's content and source, a run
    log's payload) included."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
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


@dataclass(frozen=True)
class RawBody:
    """A body taken as bytes, and the media type it came as."""

    media_type: str
    data: bytes


class _RawParser(BaseParser):
    """The body's bytes as sent (a memory file, an archive of them), at most
    KINDMEM_MAX_BODY_BYTES: the body-size middleware refuses a longer declared length, this a
    stream that brings more than it declared."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise RequestTooLarge(
                f"The request body is over the limit of {limit} bytes.", details={"limit": limit}
            )
        return RawBody(self.media_type, data)


class MarkdownParser(_RawParser):
    media_type = "text/markdown"


class ZipParser(_RawParser):
    media_type = "application/zip"
