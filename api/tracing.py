"""Spans of memory operations (remember, search, recall, a review decision, an erasure), with
the proposed OpenTelemetry GenAI memory conventions' attributes where they fit
(`gen_ai.operation.name`: `update_memory`, `search_memory`, `delete_memory`; the record counts)
and kindmem's own beside them (`kindmem.memory.kind`, the search mode, an outcome).

What a span may carry is decided here, once: the attribute names in `ATTRIBUTES`, each with
the values it may take (a number, a boolean, or a word from a closed set). Content, queries and
people's ids are never among them, whatever a caller passes: an unknown name, or a string that
is not one of the name's words, is dropped. (tests/kindmem/test_tracing.py drives every
operation with hostile content and checks no attribute holds any of it.)

Off unless config/tracing.py installed a tracer (OTEL_EXPORTER_OTLP_ENDPOINT is set): then
`memory_operation` calls the function and nothing else, at the cost of one global lookup.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from opentelemetry.trace import Status, StatusCode, Tracer

P = ParamSpec("P")
R = TypeVar("R")

_WORD = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
# A fact type: an identifier its declaration chose (`preference`), never content.
_TYPE = re.compile(r"^[a-z][a-z0-9_.-]{0,49}$")

# name -> the values it may take: int, bool, a set of words, or a pattern
ATTRIBUTES: dict[str, Any] = {
    "gen_ai.operation.name": {"update_memory", "search_memory", "delete_memory"},
    "gen_ai.memory.scope": {"user", "conversation", "agent", "team"},
    "gen_ai.memory.search.result.count": int,
    "kindmem.memory.operation": {"remember", "search", "recall", "review_decision", "erasure"},
    "kindmem.memory.kind": {"fact", "message", "approval", "erasure"},
    "kindmem.memory.type": _TYPE,
    "kindmem.search.mode": _WORD,
    "kindmem.search.top_k": int,
    "kindmem.remember.outcome": _WORD,
    "kindmem.review.pending": bool,
    "kindmem.review.decision": {"approve", "reject"},
    "kindmem.review.verify": bool,
    "kindmem.erasure.target_kind": {"participant", "user", "external", "conversation"},
    "kindmem.erasure.status": _WORD,
    "kindmem.erasure.records": int,
    "error.type": re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}$"),  # an exception's class
}

_tracer: Tracer | None = None


def tracer_install(tracer: Tracer | None) -> None:
    """config/tracing.py's: memory operations get spans from `tracer` (None: off again)."""
    global _tracer
    _tracer = tracer


def allowed(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a span may carry (the module docstring); the rest dropped."""
    kept: dict[str, Any] = {}
    for name, value in attributes.items():
        rule = ATTRIBUTES.get(name)
        if rule is None or value is None:
            continue
        if rule is bool:
            ok = isinstance(value, bool)
        elif rule is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(rule, set):
            ok = isinstance(value, str) and value in rule
        else:
            ok = isinstance(value, str) and bool(rule.match(value))
        if ok:
            kept[name] = value
    return kept


def memory_operation(
    operation: str,
    *,
    before: Callable[..., Mapping[str, Any]] | None = None,
    after: Callable[[Any], Mapping[str, Any]] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a service that is a memory operation (`kindmem.memory.operation`): with a
    tracer installed, it runs in a span named `memory <operation>`, with the attributes
    `before(**kwargs)` and `after(result)` name (filtered by `allowed`)."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def traced(*args: P.args, **kwargs: P.kwargs) -> R:
            tracer = _tracer
            if tracer is None:
                return function(*args, **kwargs)
            # an exception's message may quote content: the span keeps its class only
            with tracer.start_as_current_span(
                f"memory {operation}", record_exception=False, set_status_on_exception=False
            ) as span:
                told = {"kindmem.memory.operation": operation}
                if before is not None:
                    told.update(before(**kwargs))
                span.set_attributes(allowed(told))
                try:
                    result = function(*args, **kwargs)
                except Exception as exc:
                    span.set_status(Status(StatusCode.ERROR))
                    span.set_attributes(allowed({"error.type": type(exc).__name__}))
                    raise
                if after is not None:
                    span.set_attributes(allowed(after(result)))
                return result

        return traced

    return decorate
