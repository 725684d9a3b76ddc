"""Write the sync client (`_sync_client.py`) from the async one (`_async_client.py`).

    python clients/python/scripts/unasync.py

One source for both clients, so they never drift apart: the async module is written by hand,
the sync one by this script (as httpcore does), and tests/clients/test_python_client.py fails
when the committed sync module is not what this script writes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "kindmem_client"
SOURCE = PACKAGE / "_async_client.py"
TARGET = PACKAGE / "_sync_client.py"

DOCSTRING = '''"""`Client`: every /v1 route of kindmem, on httpx, synchronously.

Written from `_async_client.py` by `clients/python/scripts/unasync.py`: edit that module and
run the script, not this file. Each method is one route; `OPERATIONS`
(kindmem_client/operations.py) names them.
"""'''

# In this order.
SUBSTITUTIONS = [
    (r'\A""".*?"""', DOCSTRING),
    (r", asynchronously\.", "."),
    (r"httpx\.AsyncBaseTransport", "httpx.BaseTransport"),
    (r"httpx\.AsyncClient", "httpx.Client"),
    (r"\bAsyncClient\b", "Client"),
    (r"\bAsyncIterator\b", "Iterator"),
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


def ruff(source: str, *args: str) -> str:
    """`source` through this interpreter's ruff (in the test extra), with the repo's config."""
    return subprocess.run(  # noqa: S603 - fixed arguments
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def render(source: str) -> str:
    for pattern, replacement in SUBSTITUTIONS:
        source = re.sub(
            pattern, replacement, source, flags=re.DOTALL if pattern[:2] == r"\A" else 0
        )
    return ruff(ruff(source, "check", "--fix", "--select", "I", "--quiet"), "format")


if __name__ == "__main__":
    TARGET.write_text(render(SOURCE.read_text()))
    print(f"wrote {TARGET}")
