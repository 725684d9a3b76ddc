"""The review console's rendering of a memory's text: everything escaped, the words that made
it wait marked with <mark>, and invisible characters shown as their code points."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from approvals.review_reasons import is_hidden


def _visible(segment: str) -> str:
    """Escaped, with each character a reviewer could not see spelled out as its code point."""
    return escape("".join(f"⟨U+{ord(c):04X}⟩" if is_hidden(c) else c for c in segment))


def highlight(text: str, findings: Iterable[Mapping[str, Any]]) -> SafeString:
    """`text` as HTML with each finding's span in a <mark> (overlapping spans merged; the title
    names the rules). Offsets outside the text are ignored rather than trusted."""
    valid = [
        f
        for f in findings
        if isinstance(f.get("start"), int)
        and isinstance(f.get("end"), int)
        and 0 <= f["start"] < f["end"] <= len(text)
    ]
    spans: list[list[Any]] = []
    for finding in sorted(valid, key=lambda f: (f["start"], f["end"])):
        start, end = finding["start"], finding["end"]
        hidden = finding.get("reason") == "hidden-characters"
        if spans and start < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
            spans[-1][2].add(str(finding.get("rule", "")))
            spans[-1][3] = spans[-1][3] or hidden
        else:
            spans.append([start, end, {str(finding.get("rule", ""))}, hidden])
    out: list[str] = []
    at = 0
    for start, end, rules, hidden in spans:
        out.append(_visible(text[at:start]))
        out.append(
            format_html(
                '<mark class="review-{}" title="{}">{}</mark>',
                "hidden" if hidden else "match",
                ", ".join(sorted(rules)),
                mark_safe(_visible(text[start:end])),  # noqa: S308 (escaped just above)
            )
        )
        at = end
    out.append(_visible(text[at:]))
    return mark_safe("".join(out))  # noqa: S308 (every part is escaped)
