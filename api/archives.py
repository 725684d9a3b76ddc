"""The entries of a zip archive sent as a request body, unpacked within limits on the bytes they
REALLY unpack to, never on the sizes the archive declares (its sender wrote those: a 397-byte
body once held a 64 MiB entry declared as 220 bytes).

zipfile reads the central directory (names, methods, declared sizes: bounded by the body's own
size); the data is inflated here, at most CHUNK bytes at a time, and refused as soon as
- an entry unpacks past the size its headers declare (a lying header),
- the entries together unpack past `limits.total_bytes`,
- an entry past RATIO_FLOOR bytes unpacks to more than `limits.ratio` times the compressed bytes
  read for it (a bomb is refused early, small files of repeated text are not),
so what one request holds is at most about `total_bytes` + 2 * CHUNK.

Only stored and deflate entries are read: what kindmem's export and every zip tool write by
default. Any other method is refused before anything is inflated: zipfile's bzip2 and lzma
readers do not bound their output (a 295-byte bzip2 entry made a web worker allocate 400 MB), and
an import needs neither. Encrypted entries are refused too.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from api.errors import RequestTooLarge, UnsupportedMediaType, ValidationFailed

CHUNK = 64 * 1024
# Below this many bytes unpacked an entry is never refused for its ratio: a short file of one
# repeated character compresses past any sane ratio, and costs nothing.
RATIO_FLOOR = 64 * 1024
ACCEPTED = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}

_LOCAL_HEADER = struct.Struct("<4sHHHHHLLLHH")  # APPNOTE 4.3.7, 30 bytes
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ENCRYPTED = 0x1


@dataclass(frozen=True)
class Limits:
    """How far the entries of one archive may unpack: in all (bytes), and each against its
    compressed size (a ratio). The caller names the settings they come from."""

    total_bytes: int
    ratio: int
    total_setting: str
    ratio_setting: str


def unpacked(body: bytes, entries: Sequence[zipfile.ZipInfo], limits: Limits) -> Iterator[bytes]:
    """Each entry's bytes, in order, inflated within `limits` (the module docstring). `entries`
    are the ones to read, from `zipfile.ZipFile` over this same `body`."""
    for info in entries:
        if info.compress_type not in ACCEPTED:
            method = zipfile.compressor_names.get(info.compress_type, f"{info.compress_type}")  # type: ignore[attr-defined]
            raise UnsupportedMediaType(
                f"{info.filename}: compressed with {method}; an archive's entries may be stored"
                " or compressed with deflate only.",
                details={
                    "file": info.filename,
                    "compression": method,
                    "accepted": sorted(ACCEPTED.values()),
                },
            )
        if info.flag_bits & _ENCRYPTED:
            raise _refused(info, "Encrypted; send the archive unencrypted.")
    declared = sum(info.file_size for info in entries)
    if declared > limits.total_bytes:
        # honest headers over the limit: refused before anything is inflated
        raise _too_large(
            None, limits, f"The archive's memory files declare {declared} bytes unpacked"
        )
    view = memoryview(body)
    spent = 0
    for info in entries:
        start = _data_start(view, info)
        if info.compress_type == zipfile.ZIP_STORED:
            data = _stored(view, info, start, limits, spent)
        else:
            data = _inflated(view, info, start, limits, spent)
        if zlib.crc32(data) != info.CRC:
            raise _refused(info, "Its CRC-32 does not match its data.")
        spent += len(data)
        yield data


def _data_start(view: memoryview, info: zipfile.ZipInfo) -> int:
    """Where the entry's data begins: after its local header, which must agree with the central
    directory on the name and the method (a reader of local headers would read another file)."""
    offset = info.header_offset
    if offset < 0 or offset + _LOCAL_HEADER.size > len(view):
        raise _refused(info, "Its local header is outside the archive.")
    fields = _LOCAL_HEADER.unpack_from(view, offset)
    signature, method, name_length, extra_length = fields[0], fields[3], fields[9], fields[10]
    name_at = offset + _LOCAL_HEADER.size
    name = bytes(view[name_at : name_at + name_length])
    central_name = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    if signature != _LOCAL_SIGNATURE or method != info.compress_type or name != central_name:
        raise _refused(info, "Its local header does not match the archive's directory.")
    return name_at + name_length + extra_length


def _stored(
    view: memoryview, info: zipfile.ZipInfo, start: int, limits: Limits, spent: int
) -> bytes:
    size = info.compress_size
    if size != info.file_size:
        raise _lying(info)
    if start + size > len(view):
        raise _refused(info, "It is cut short.")
    if spent + size > limits.total_bytes:
        raise _too_large(info, limits, f"unpack past {limits.total_bytes} bytes")
    return bytes(view[start : start + size])


def _inflated(
    view: memoryview, info: zipfile.ZipInfo, start: int, limits: Limits, spent: int
) -> bytes:
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # a zip's deflate data is raw
    parts: list[bytes] = []
    out = 0
    fed = start  # the next compressed byte to feed
    try:
        while not inflater.eof:
            pending = inflater.unconsumed_tail
            if not pending:
                if fed >= len(view):
                    raise _refused(info, "It is cut short.")
                pending = view[fed : fed + CHUNK]  # type: ignore[assignment]
                fed += len(pending)
            part = inflater.decompress(pending, CHUNK)
            out += len(part)
            if out > info.file_size:
                raise _lying(info)
            if spent + out > limits.total_bytes:
                raise _too_large(
                    info, limits, "With the files before it, it unpacks past the limit"
                )
            read = fed - start - len(inflater.unconsumed_tail)
            if out > RATIO_FLOOR and out > limits.ratio * read:
                raise _too_large(
                    info, limits, f"It unpacks to over {limits.ratio} times its compressed size"
                )
            parts.append(part)
    except zlib.error:
        raise _refused(info, "Its deflate data is broken.") from None
    read = fed - start - len(inflater.unused_data)
    if out != info.file_size or read != info.compress_size:
        raise _refused(info, "It unpacks to other sizes than its headers declare.")
    return b"".join(parts)


def _lying(info: zipfile.ZipInfo) -> ValidationFailed:
    return ValidationFailed(
        f"{info.filename}: unpacks to more than the {info.file_size} bytes its headers declare.",
        details={
            "file": info.filename,
            "fields": {"file": ["Unpacks to more than its headers declare."]},
            "declared_bytes": info.file_size,
        },
    )


def _refused(info: zipfile.ZipInfo, problem: str) -> ValidationFailed:
    return ValidationFailed(
        f"{info.filename}: {problem}",
        details={"file": info.filename, "fields": {"file": [problem]}},
    )


def _too_large(info: zipfile.ZipInfo | None, limits: Limits, problem: str) -> RequestTooLarge:
    """413 naming the limits and their settings (and the file, when one is to blame)."""
    details: dict[str, Any] = {
        "limit": limits.total_bytes,
        "setting": limits.total_setting,
        "ratio_limit": limits.ratio,
        "ratio_setting": limits.ratio_setting,
    }
    said = (
        f"{problem}: at most {limits.total_bytes} bytes unpacked in all ({limits.total_setting}),"
        f" at most {limits.ratio} times an entry's compressed size ({limits.ratio_setting})."
    )
    if info is None:
        return RequestTooLarge(said, details=details)
    return RequestTooLarge(f"{info.filename}: {said}", details={"file": info.filename, **details})
