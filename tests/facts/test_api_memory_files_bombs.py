"""Hostile archives at `POST /v1/facts/import`, sent with every credential kind that may import:
bzip2 and deflate bombs, lying headers, many and overlapping entries, a zip in a zip. Each is
answered in the error shape with nothing written, and a real web worker's peak RSS stays under a
stated bound while it refuses them (api/archives.py)."""

from __future__ import annotations

import http.client
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest

from tests import factories
from tests.conftest import World, world_create
from tests.facts.memory_file_requests import ZIP, counts, import_files, memory, zipped
from tests.facts.zip_bombs import (
    MiB,
    archive,
    bzip2_bomb,
    deflate_bomb,
    lying_entry,
    stored,
)
from tests.processes import web_server

CREDENTIALS = ("admin", "app", "user_key", "run")


def credential(world: World, kind: str) -> Any:
    if kind == "run":
        return factories.run_create(world.app, world.project, participant_id="p-1")
    return getattr(world, kind)


@cache  # built once for the module: a 256 MiB bomb takes a second or two
def _bzip2() -> bytes:
    # 256 MiB of zeros in ~200 bytes of bzip2, declared as 220 bytes: zipfile inflates bzip2
    # whole, whatever is asked of it
    return archive([replace(bzip2_bomb("facts/f-1.md", 256 * MiB), size=220)])


@cache
def _lzma() -> bytes:
    return zipped_with({"facts/f-1.md": memory()}, zipfile.ZIP_LZMA)


@cache
def _deflate() -> bytes:
    # 256 MiB of zeros in ~250 KB, declared honestly: refused before anything is inflated
    return archive([deflate_bomb("facts/f-1.md", 256 * MiB)])


@cache
def _deflate_declared_small() -> bytes:
    # the same 256 MiB declared as 220 bytes: refused at the first chunk past them
    return archive([replace(deflate_bomb("facts/f-1.md", 256 * MiB), size=220)])


@cache
def _deflate_within_the_declared_limit() -> bytes:
    # 4 MiB of zeros in ~4 KB: declared under the 8 MiB limit, refused for its ratio
    return archive(
        [stored("facts/a.md", memory("a").encode()), deflate_bomb("facts/b.md", 4 * MiB)]
    )


@cache
def _lying() -> bytes:
    # a memory file, then 64 MiB more, in ~65 KB; both headers declare the file alone (its size
    # and CRC): zipfile reads the file and stops, and so did the import
    return archive([lying_entry("facts/f-1.md", memory(), 64 * MiB)])


@cache
def _lying_stored() -> bytes:
    # stored: 100 KB more than the size declared in both headers
    entry = stored("facts/f-1.md", memory().encode() + b"\0" * 100_000)
    return archive([replace(entry, size=len(memory()))])


@cache
def _many() -> bytes:
    # one more memory file than KINDMEM_MEMORY_FILES_MAX (1000)
    return zipped({f"facts/f-{i}.md": memory(f"f-{i}") for i in range(1001)})


@cache
def _overlapping() -> bytes:
    # a hundred directory records, each of its own name, all pointing at one kernel of 60 KiB
    # (D. Fifield's non-recursive bomb): the second one's local header names another file
    kernel = deflate_bomb("facts/f-0.md", 60 * 1024)
    records = [replace(kernel, name=f"facts/f-{i}.md") for i in range(100)]
    return archive(records, shared_data=True)


@cache
def _nested() -> bytes:
    # a bomb inside a memory file's entry (stored: deflate would refuse the twice-compressed
    # zeros for their ratio first): read as the entry's bytes, never opened
    return zipped_with({"facts/f-1.md": _deflate()}, zipfile.ZIP_STORED)


@cache
def _nested_elsewhere() -> bytes:
    # memory files inside an inner zip: not the archive's own facts/<id>.md entries
    return zipped({"inner.zip": zipped({"facts/f-1.md": memory()})})


def zipped_with(files: dict[str, str | bytes], method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as written:
        for name, text in files.items():
            written.writestr(name, text)
    return buffer.getvalue()


# name: (body, status, code, what its details must hold)
HOSTILE: dict[str, tuple[Callable[[], bytes], int, str, dict[str, Any]]] = {
    "bzip2-bomb": (
        _bzip2,
        415,
        "unsupported-media-type",
        {"file": "facts/f-1.md", "compression": "bzip2", "accepted": ["deflate", "stored"]},
    ),
    "lzma": (_lzma, 415, "unsupported-media-type", {"compression": "lzma"}),
    "deflate-bomb": (
        _deflate,
        413,
        "request-too-large",
        {"limit": 8 * MiB, "setting": "KINDMEM_IMPORT_MAX_UNPACKED_BYTES"},
    ),
    "deflate-bomb-declared-small": (
        _deflate_declared_small,
        400,
        "validation-error",
        {"file": "facts/f-1.md", "declared_bytes": 220},
    ),
    "deflate-bomb-past-the-ratio": (
        _deflate_within_the_declared_limit,
        413,
        "request-too-large",
        {"file": "facts/b.md", "ratio_limit": 100, "ratio_setting": "KINDMEM_IMPORT_MAX_RATIO"},
    ),
    "lying-header": (_lying, 400, "validation-error", {"file": "facts/f-1.md"}),
    "lying-stored-entry": (_lying_stored, 400, "validation-error", {"file": "facts/f-1.md"}),
    "many-entries": (
        _many,
        413,
        "request-too-large",
        {"files": 1001, "limit": 1000, "setting": "KINDMEM_MEMORY_FILES_MAX"},
    ),
    "overlapping-entries": (_overlapping, 400, "validation-error", {"file": "facts/f-1.md"}),
    "nested-zip": (_nested, 400, "validation-error", {"file": "facts/f-1.md"}),
    "nested-zip-elsewhere": (_nested_elsewhere, 400, "validation-error", {}),
}


def _expect(response: Any, name: str) -> None:
    """The answer `HOSTILE[name]` names, in the error shape."""
    _, status, code, details = HOSTILE[name]
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == code
    assert details.items() <= body["details"].items(), body["details"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_archive_is_refused_in_the_error_shape_with_nothing_written(api, name):
    # given a tenant with keys of every kind and a run, and a hostile archive
    world = world_create()
    body = HOSTILE[name][0]()
    assert len(body) < 1024 * 1024  # every one passes the body limit: what it unpacks to is
    for kind in CREDENTIALS:
        keyed = credential(world, kind)
        before = counts()
        # when it is imported with this credential
        response = import_files(api, keyed, body)
        # then it is refused, naming the limit or the entry, and nothing is written
        _expect(response, name)
        assert counts() == before, kind


@pytest.mark.django_db
def test_an_honest_archive_of_stored_and_deflate_entries_imports(api, world):
    # given honest archives: written by hand as the hostile ones are, and by zipfile, stored
    # and deflate, one of a few repeated KB (under the ratio's floor)
    text = memory("b", "tea " * 7_000)
    honest = [
        archive([stored("facts/a.md", memory("a").encode()), lying_entry("facts/b.md", text, 0)]),
        zipped_with({"facts/a.md": memory("a")}, zipfile.ZIP_STORED),
        zipped({"facts/b.md": text}),
    ]
    for body in honest:
        # when each is imported
        response = import_files(api, world.admin, body)
        # then its files are facts
        assert response.status_code == 200, response.json()
        assert {f["outcome"] for f in response.json()["files"]} <= {"created", "unchanged"}
    assert counts()[0] == 2


# ---- a real web worker's memory ----------------------------------------------------------------

# What the worker's peak RSS may grow by while it refuses every hostile archive above with every
# credential: well under one bomb (256 MiB; the lying entry 64 MiB), a few times what the
# running cap lets one import hold (KINDMEM_IMPORT_MAX_UNPACKED_BYTES, 8 MiB). A worker that
# inflated any one entry whole would pass it.
PEAK_RSS_GROWTH_BOUND = 48 * MiB


def peak_rss(process: psutil.Process) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    [kilobytes] = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(kilobytes) * 1024


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker) -> Iterator[tuple[str, psutil.Process]]:
    """kindmem's web process as production starts it, with one worker: its URL and the worker."""
    with django_db_blocker.unblock(), web_server("--workers", "1") as base:
        bind = urlsplit(base).netloc
        [master] = [p for p in psutil.Process().children() if bind in " ".join(p.cmdline())]
        [worker] = master.children()
        yield base, worker


def post_import(base: str, keyed: Any, body: bytes) -> tuple[int, dict[str, Any]]:
    split = urlsplit(base)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=120)
    try:
        conn.request(
            "POST",
            "/v1/facts/import",
            body=body,
            headers={"Authorization": f"Bearer {keyed.token}", "Content-Type": ZIP},
        )
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.django_db(transaction=True)
def test_a_web_worker_refuses_every_hostile_archive_within_a_bounded_peak_rss(served):
    base, worker = served
    # given a tenant with keys of every kind and a run, each of which has imported an honest
    # archive through this worker (so what the first import loads is in its baseline)
    world = world_create()
    keyed = {kind: credential(world, kind) for kind in CREDENTIALS}
    for kind, credential_ in keyed.items():
        honest = zipped({f"facts/{kind}.md": memory(kind)})
        status, answer = post_import(base, credential_, honest)
        assert status == 200, (kind, answer)
    bodies = {name: build() for name, (build, *_) in HOSTILE.items()}
    before, baseline = counts(), peak_rss(worker)
    # when every hostile archive is sent with every credential
    answers = {
        (name, kind): post_import(base, credential_, body)
        for name, body in bodies.items()
        for kind, credential_ in keyed.items()
    }
    # then the same worker serves, its peak RSS grown by less than the bound
    grown = peak_rss(worker) - baseline
    print(f"peak RSS: {baseline / MiB:.1f} MiB, grew by {grown / MiB:.2f} MiB")
    assert worker.is_running()
    assert grown < PEAK_RSS_GROWTH_BOUND, f"peak RSS grew by {grown / MiB:.1f} MiB"
    # and each was refused in the error shape, with nothing written
    for (name, kind), (answer_status, answer) in answers.items():
        _, status, code, details = HOSTILE[name]
        assert (answer_status, answer["code"]) == (status, code), (name, kind, answer)
        assert details.items() <= answer["details"].items(), (name, kind, answer)
    assert counts() == before
