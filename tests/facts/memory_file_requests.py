"""The memory-file routes as the tests/facts/test_api_memory_files_*.py tests call them
(`export`, `import_files`), and what they send and read back (`memory`, `zipped`, `parsed`,
`counts`)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from facts.memory_files import FORMAT, parse_memory_file, serialize_memory_file
from facts.models import Fact, Link, Revision
from tests.oracles import memory_file_problems

ZIP = "application/zip"


def export(api: Any, keyed: Any, **params: Any) -> dict[str, str]:
    """`GET /v1/facts/export` as `keyed`: each file's name and text."""
    response = api.get("/v1/facts/export", params, **keyed.headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == ZIP
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    return {name: archive.read(name).decode() for name in archive.namelist()}


def parsed(files: dict[str, str]) -> dict[str, tuple[dict[str, Any], str]]:
    """Each file by its id: its envelope and body (every file passing the seed's rules)."""
    out = {}
    for name, text in files.items():
        stem = name.removeprefix("facts/").removesuffix(".md")
        assert memory_file_problems(text, stem) == [], name
        memory = parse_memory_file(text, stem=stem)
        out[stem] = (memory.envelope, memory.body)
    return out


def zipped(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def import_files(
    api: Any, keyed: Any, data: bytes | str, content_type: str = ZIP, **params: Any
) -> Any:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.generic(
        "POST",
        f"/v1/facts/import?{query}",
        data=data.encode() if isinstance(data, str) else data,
        content_type=content_type,
        **keyed.headers,
    )


def counts() -> tuple[int, int, int]:
    return Fact.objects.count(), Revision.objects.count(), Link.objects.count()


def memory(stem: str = "f-1", body: str = "likes tea", **changes: Any) -> str:
    """A memory file of a fact in no container (`kindmem` fields replaced by `changes`)."""
    envelope: dict[str, Any] = {
        "id": stem,
        "entityId": stem,
        "kind": "note",
        "tags": [],
        "links": [],
        "created": 1,
        "updated": 1,
        "seq": 1,
        "contentHash": "",
        "provenance": {
            "source": "host-ingest",
            "kindmem": {"format": FORMAT, "body": "text", "key": None, "scope": {}},
        },
    }
    envelope["provenance"]["kindmem"].update(changes.pop("kindmem", {}))
    envelope.update(changes)
    return serialize_memory_file(envelope, body)
