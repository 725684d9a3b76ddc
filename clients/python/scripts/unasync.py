"""Write the sync client (`kindmem_client/_sync/`) from the async one (`kindmem_client/_async/`).

    python clients/python/scripts/unasync.py

One source for both clients, so they never drift apart: the async modules are written by hand,
the sync ones by this script (as httpcore does), module for module, and
tests/clients/test_python_client.py fails when the committed sync package is not what this
script writes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "kindmem_client"
SOURCE = PACKAGE / "_async"
TARGET = PACKAGE / "_sync"

# A sync module's docstring: the first paragraph of its async module's (through SUBSTITUTIONS),
# and this.
WRITTEN = """Written from `kindmem_client/_async/{name}` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file."""

# In this order.
SUBSTITUTIONS = [
    (r"kindmem_client\._async\b", "kindmem_client._sync"),
    (r", asynchronously\.", "."),
    # AsyncClient, AsyncIterator, httpx.AsyncBaseTransport, AsyncCore, AsyncFacts, ...
    (r"\bAsync(?=[A-Z])", ""),
    (r"Callable\[\[float\], Awaitable\[None\]\]", "Callable[[float], None]"),
    (r"\bAwaitable, ", ""),
    (r"\basync def __aenter__", "def __enter__"),
    (r"\basync def __aexit__", "def __exit__"),
    (r"\baclose\b", "close"),
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"import anyio\n", "import time\n"),
    (r"\banyio\.sleep\b", "time.sleep"),
    # an async generator cannot `yield from`; a sync one should
    (r"for (\w+) in ([^\n]+):\n\s+yield \1\n", r"yield from \2\n"),
]


def pairs() -> list[tuple[Path, Path]]:
    """Each async module and the sync module written from it."""
    return [(source, TARGET / source.name) for source in sorted(SOURCE.glob("*.py"))]


def ruff(source: str, target: Path, *args: str) -> str:
    """`source` through this interpreter's ruff (in the test extra), with the repo's config."""
    return subprocess.run(  # noqa: S603 - fixed arguments
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(target), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def substituted(source: str) -> str:
    for pattern, replacement in SUBSTITUTIONS:
        source = re.sub(pattern, replacement, source)
    return source


def render(source: str, target: Path) -> str:
    """The sync module `target` written from the async module's `source`."""
    docstring = re.match(r'"""(.*?)"""', source, flags=re.DOTALL)
    assert docstring is not None, f"{target.name}'s async module starts with its docstring"
    summary = substituted(docstring.group(1).split("\n\n")[0].strip())
    code = substituted(source[docstring.end() :])
    written = f'"""{summary}\n\n{WRITTEN.format(name=target.name)}\n"""{code}'
    imports_sorted = ruff(written, target, "check", "--fix", "--select", "I", "--quiet")
    return ruff(imports_sorted, target, "format")


if __name__ == "__main__":
    TARGET.mkdir(exist_ok=True)
    written = set()
    for source, target in pairs():
        target.write_text(render(source.read_text(), target))
        written.add(target)
        print(f"wrote {target}")
    for stale in set(TARGET.glob("*.py")) - written:
        stale.unlink()
        print(f"removed {stale}")
