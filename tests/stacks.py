"""A call made under other stacks than the test's own: below hundreds more frames, and under a
lower or a higher recursion limit, so that a test holds an answer that must not depend on where
Python's recursion limit falls (a request's parse is deeper in one process than in another)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# name -> (recursion limit, or None for the interpreter's; frames added below the call)
STACKS: dict[str, tuple[int | None, int]] = {
    "as the test calls": (None, 0),
    "400 frames deeper": (None, 400),
    "a recursion limit of 700": (700, 0),
    "a recursion limit of 20000": (20_000, 0),
}


def _below(frames: int, call: Callable[[], T]) -> T:
    return call() if frames == 0 else _below(frames - 1, call)


def under(stack: str, call: Callable[[], T]) -> T:
    """`call()` under the named stack of STACKS."""
    limit, frames = STACKS[stack]
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit or before)
    try:
        return _below(frames, call)
    finally:
        sys.setrecursionlimit(before)
