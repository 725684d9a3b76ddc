"""The memory files of an import's request body (`POST /v1/facts/import`): one `text/markdown`
file, or the `facts/<id>.md` entries of a zip, bounded in number and in the bytes they really
unpack to; and
`refused`, the `validation-error` that names a file."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from api import archives
from api.errors import RequestTooLarge, ValidationFailed

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


def refused(name: str, fields: Mapping[str, Any]) -> ValidationFailed:
    """A file refused: `validation-error` naming it and its fields (the first in the message)."""
    first_field, problems = next(iter(fields.items()))
    problem = problems[0] if isinstance(problems, list) and problems else problems
    return ValidationFailed(
        f"{name}: {first_field}: {problem}", details={"file": name, "fields": dict(fields)}
    )


def uploaded_files(body: bytes, media_type: str) -> list[Uploaded]:
    """The memory files of a request body: one `text/markdown` file, or the `facts/*.md`
    entries of an `application/zip` (its other entries are not memory files), at most
    KINDMEM_MEMORY_FILES_MAX of them, unpacked within KINDMEM_IMPORT_MAX_UNPACKED_BYTES and
    KINDMEM_IMPORT_MAX_RATIO as they really inflate (api/archives.py: 413 `request-too-large`;
    a method other than stored or deflate is 415, an entry bigger than it declares 400)."""
    if media_type == MARKDOWN:
        return [Uploaded(None, _text(body, "the body"))]
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        entries = [
            info
            for info in archive.infolist()
            # the name first: is_dir() fails on the empty name of one cut at a NUL
            if _ENTRY.fullmatch(info.filename)
            and not info.is_dir()
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
            f"The archive holds {len(entries)} memory files; an import takes at most {most}"
            " (KINDMEM_MEMORY_FILES_MAX).",
            details={"files": len(entries), "limit": most, "setting": "KINDMEM_MEMORY_FILES_MAX"},
        )
    seen: set[str] = set()
    for info in entries:
        if info.filename in seen:
            raise refused(info.filename, {"file": ["The archive holds two entries of this name."]})
        seen.add(info.filename)
    limits = archives.Limits(
        total_bytes=settings.IMPORT_MAX_UNPACKED_BYTES,
        ratio=settings.IMPORT_MAX_RATIO,
        total_setting="KINDMEM_IMPORT_MAX_UNPACKED_BYTES",
        ratio_setting="KINDMEM_IMPORT_MAX_RATIO",
    )
    # inflated here within the limits on real bytes, never by zipfile (api/archives.py)
    return [
        Uploaded(info.filename, _text(data, info.filename))
        for info, data in zip(entries, archives.unpacked(body, entries, limits), strict=True)
    ]


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise refused(name, {"file": ["Not UTF-8 text."]}) from None
