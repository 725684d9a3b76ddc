"""What changed between two revisions of a fact, word by word, for the console's fact page.

A revision's content is compared as people read it (`revision_text`: its text, then each
other field as "key: value" on a line of its own), split into words, punctuation and the
whitespace between them, and matched with difflib. The result is HTML built from escaped
pieces only: removed words in <del>, added words in <ins>, the rest as it was (content comes
from agents; nothing of it is ever marked safe unescaped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from console.tenant_wall import readable_content

# Words, single punctuation marks, and runs of whitespace: joined again, the tokens are the text.
_TOKENS = re.compile(r"\w+|[^\w\s]|\s+")
# Beyond this many tokens a side, no word diff (difflib is quadratic at worst); the page then
# shows both versions whole. A fact is a sentence or a few fields, far below it.
MAX_TOKENS = 4000
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class WordDiff:
    html: SafeString
    added: int  # words
    removed: int
    compared: bool = True  # False: too long to compare word by word

    @property
    def unchanged(self) -> bool:
        return self.compared and not (self.added or self.removed)


def revision_text(content: Any) -> str:
    """A revision's content as one text, the way the page shows it."""
    shown = readable_content(content)
    lines = [shown["text"]] if "text" in shown else []
    lines += [f"{key}: {value}" for key, value in shown["pairs"]]
    return "\n".join(lines)


def _words(text: str) -> int:
    return sum(1 for token in _TOKENS.findall(text) if not token.isspace())


def word_diff(old: str, new: str) -> WordDiff:
    """`new` against `old`: <del> what went, <ins> what came, escaped."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    if len(before) > MAX_TOKENS or len(after) > MAX_TOKENS:
        return WordDiff(html=SafeString(""), added=0, removed=0, compared=False)
    # [unchanged?, old text, new text], neighbouring changes merged, and what stands between
    # two changes with no word in it (a space, a comma, a bracket) taken into them:
    # "<del>a b</del><ins>x y</ins>", not four pieces.
    pieces: list[list[Any]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        old_part, new_part = "".join(before[i1:i2]), "".join(after[j1:j2])
        if tag == "equal":
            pieces.append([True, old_part, new_part])
        elif pieces and not pieces[-1][0]:
            pieces[-1][1] += old_part
            pieces[-1][2] += new_part
        else:
            pieces.append([False, old_part, new_part])
    merged: list[list[Any]] = []
    for index, piece in enumerate(pieces):
        between_changes = (
            piece[0]
            and not _WORD.search(piece[1])
            and merged
            and not merged[-1][0]
            and index + 1 < len(pieces)
            and not pieces[index + 1][0]
        )
        if merged and not merged[-1][0] and (between_changes or not piece[0]):
            merged[-1][1] += piece[1]
            merged[-1][2] += piece[2]
        else:
            merged.append(list(piece))
    html: list[str] = []
    added = removed = 0
    for same, old_part, new_part in merged:
        if same:
            html.append(conditional_escape(new_part))
            continue
        if old_part:
            html.append(format_html("<del>{}</del>", old_part))
            removed += _words(old_part)
        if new_part:
            html.append(format_html("<ins>{}</ins>", new_part))
            added += _words(new_part)
    # Every piece was escaped (conditional_escape, format_html) before it was joined.
    return WordDiff(html=mark_safe("".join(html)), added=added, removed=removed)  # noqa: S308
