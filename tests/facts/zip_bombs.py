"""Hostile zip archives for the import, written byte by byte (APPNOTE 4.3) so that what each
header declares is whatever the attacker chose: bombs of every method, lying sizes, many and
overlapping entries, a zip in a zip. Each is a small body; what it would unpack to is named."""

from __future__ import annotations

import bz2
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

MiB = 1024 * 1024
_BLOCK = b"\0" * MiB
# what a version-needed field says for each method (APPNOTE 4.4.3.2)
_VERSION = {zipfile.ZIP_STORED: 10, zipfile.ZIP_DEFLATED: 20, zipfile.ZIP_BZIP2: 46}


@dataclass(frozen=True)
class Entry:
    """One entry as its headers declare it (`size`, `crc`) and the bytes it really carries."""

    name: str
    method: int
    data: bytes  # the compressed bytes
    size: int  # the declared unpacked size
    crc: int
    local_name: str | None = None  # another name in the local header (overlapping entries)


def archive(entries: list[Entry], *, shared_data: bool = False) -> bytes:
    """The zip of `entries`: local headers and data, the central directory, its end. With
    `shared_data`, every central record points at the first entry's local header and data (the
    overlapping-entry bomb: one kernel read many times)."""
    body = b""
    offsets = []
    for entry in entries[:1] if shared_data else entries:
        offsets.append(len(body))
        name = (entry.local_name or entry.name).encode()
        body += struct.pack(
            "<4sHHHHHLLLHH",
            b"PK\x03\x04",
            _VERSION[entry.method],
            0,
            entry.method,
            0,
            0x21,
            entry.crc,
            len(entry.data),
            entry.size,
            len(name),
            0,
        )
        body += name + entry.data
    directory = b""
    for index, entry in enumerate(entries):
        name = entry.name.encode()
        directory += struct.pack(
            "<4sHHHHHHLLLHHHHHLL",
            b"PK\x01\x02",
            20,
            _VERSION[entry.method],
            0,
            entry.method,
            0,
            0x21,
            entry.crc,
            len(entry.data),
            entry.size,
            len(name),
            0,
            0,
            0,
            0,
            0,
            offsets[0 if shared_data else index],
        )
        directory += name
    end = struct.pack(
        "<4sHHHHLLH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory), len(body), 0
    )
    return body + directory + end


def deflated(head: bytes, zeros: int) -> tuple[bytes, int]:
    """`head` then `zeros` zero bytes as raw deflate, compressed a MiB at a time (the test never
    holds the whole), and the CRC-32 of all of it."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    data, crc = [packer.compress(head)], zlib.crc32(head)
    for block in _zeros(zeros):
        data.append(packer.compress(block))
        crc = zlib.crc32(block, crc)
    data.append(packer.flush())
    return b"".join(data), crc


def _zeros(size: int) -> Iterator[bytes]:
    """`size` zero bytes, a MiB at a time."""
    for start in range(0, size, MiB):
        yield _BLOCK[: min(MiB, size - start)]


def deflate_bomb(name: str, size: int) -> Entry:
    """An honest deflate entry of `size` zero bytes (~1/1000 of it compressed)."""
    data, crc = deflated(b"", size)
    return Entry(name, zipfile.ZIP_DEFLATED, data, size, crc)


def bzip2_bomb(name: str, size: int) -> Entry:
    """A bzip2 entry of `size` zero bytes: a few hundred bytes, whatever the size."""
    packer = bz2.BZ2Compressor(9)
    crc = 0
    data = []
    for block in _zeros(size):
        data.append(packer.compress(block))
        crc = zlib.crc32(block, crc)
    data.append(packer.flush())
    return Entry(name, zipfile.ZIP_BZIP2, b"".join(data), size, crc)


def lying_entry(name: str, text: str, padding: int) -> Entry:
    """An entry whose headers declare `text` (its size and CRC) while its deflate data unpacks
    to `text` and then `padding` more zero bytes: a reader that trusts the header, or stops at
    the declared size, imports `text`."""
    head = text.encode()
    data, _ = deflated(head, padding)
    return Entry(name, zipfile.ZIP_DEFLATED, data, len(head), zlib.crc32(head))


def stored(name: str, payload: bytes) -> Entry:
    return Entry(name, zipfile.ZIP_STORED, payload, len(payload), zlib.crc32(payload))
