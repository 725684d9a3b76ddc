"""The write gate: the one function that decides whether a write of memory content waits for a
person, whichever door it came through (remember, POST/PUT facts, supersede, merge patch, every
import format, extraction, MCP, the console).

Only an agent's run is reviewed: a person or an app asserts what it writes (its authority over
governance fields is the authority table's). For a run, the gate reads the WHOLE content as the
reviewer reads it (`review_text`): every key and every value at every depth, a line each (an
empty object or list still shows its key), plus the fact's slot key and tags, all through the
folding detectors of `approvals.review_reasons` (NFKD, hidden characters dropped, look-alike
letters folded), so what fires is what the console marks.

Doors call it as `gate.write_gate(...)` (through the module), so the generated test of every
door can see each one reach it (tests/approvals/test_write_gate_doors.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from approvals.review_reasons import detect, reasons_of, review_text
from facts.review import ReviewNeeded
from kindmem.access import Principal, PrincipalKind


def write_gate(
    *,
    principal: Principal,
    content: Any,
    labels: Sequence[Any] = (),
    identifiers: Sequence[str | None] = (),
    wide_scope: bool,
    also: Sequence[str] = (),
) -> ReviewNeeded:
    """Whether `principal`'s write of `content` waits for a person, and why. `labels` are read
    beside the content (a slot key, tags); `wide_scope` is the declaration's or the fact's
    reach; `also` are reasons a caller adds (extraction's), never taking one away. A label
    that is not text (a source object) is read as content is, every key and value;
    `identifiers` (a run step's and a tool call's ids, shown to readers with the fact) are read
    by every rule but the imperative one (`call_8f2a` is an id, not an order)."""
    run = principal.run
    if principal.kind != PrincipalKind.RUN or run is None:
        return ReviewNeeded()
    tools = [t for t in run.agent.tools if isinstance(t, str)]
    shown = detect(review_text(content), tool_names=tools)
    # the slot key, tags, source and run step ids fire a reason, with no span in the text
    # the reviewer reads
    beside = detect(
        "\n".join(
            label if isinstance(label, str) else review_text(label)
            for label in labels
            if label is not None and label != ""
        ),
        tool_names=tools,
    )
    ids = detect("\n".join(i for i in identifiers if i), tool_names=tools, imperatives=False)
    reasons = reasons_of([*shown, *beside, *ids], wide_scope=wide_scope)
    reasons += [r for r in also if r not in reasons]
    return ReviewNeeded(reasons, shown)
