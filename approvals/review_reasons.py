"""Why a remembered fact must wait for a person: the instruction-like and hidden-characters
detectors (the reasons themselves are facts' vocabulary: `facts.review`).

A memory is data about a person; a text that *instructs* the model (imperatives at the start
of a sentence, "ignore previous instructions", a URL to fetch, one of the agent's tools, words
aimed at the model such as "system prompt" or "you are") is how a conversation smuggles
instructions into every later run. Such texts wait for a reviewer (`instruction-like`), as do
texts with characters a reviewer could not see (`hidden-characters`: zero-width, bidi
controls, Unicode tag characters), and memories whose scope reaches beyond one person
(`wide-scope`, decided from the declaration, not here).

The detector errs towards asking: a false positive costs a reviewer a click, a false negative
lets an instruction through. Each finding records the rule and the span it matched, so the
console can mark the words.

The rules read a *folded* text, so that a spelling a model reads as the same words is caught
as those words: compatibility forms (fullwidth letters, mathematical letters) by NFKD,
combining marks dropped, hidden characters dropped (`ign\u200bore`), and letters of other
scripts that look like Latin ones (Cyrillic `\u0435`, Greek `\u03bf`) folded to the Latin
letter they imitate, from Unicode TR39's confusables (the `confusable-homoglyphs` package's
data). Each folded character remembers where it came from, so a finding's span is the
original text's.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from confusable_homoglyphs.confusables import confusables_data

from facts.review import HIDDEN_CHARACTERS, INSTRUCTION_LIKE, REASONS, WIDE_SCOPE, Finding

# Verbs and words that begin an instruction when they begin a sentence or a line ("Always
# answer in French"), but are ordinary in the middle of one ("She always orders tea").
_IMPERATIVES = (
    r"always|never|ignore|disregard|forget|do\s+not|don'?t|must|stop|override|pretend|"
    r"act\s+as|respond|reply|answer|say|tell|send|call|visit|click|execute|"
    r"remember\s+to|make\s+sure|be\s+sure|from\s+now\s+on|note\s+to\s+self"
)
# Where a sentence may start: the text's start, after a sentence's end (. ! ? ; : or a line
# break, with any space between), or after a list bullet. Decided per imperative word by looking
# back over the space before it (`_starts_sentence`): a regex lookbehind followed by `\s*` would
# rescan a run of line breaks from each of them (quadratic: 8,000 newlines took 10 s).
_SENTENCE_ENDS = ".!?;:\n"
_BULLETS = "-*•"
_IMPERATIVE = re.compile(rf"\b(?:{_IMPERATIVES})\b", re.IGNORECASE)

_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("from-now-on", re.compile(r"\bfrom\s+now\s+on\b|\bgoing\s+forward\b", re.IGNORECASE)),
    (
        "override-instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?"
            r"\b(?:instructions?|rules?|guidelines?|polic(?:y|ies)|prompts?|context)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "addresses-the-model",
        re.compile(
            r"\byou\s+(?:are|must|should|will|shall|have\s+to|need\s+to|may\s+not|can\s+now)\b"
            r"|\byou'(?:re|ll)\b"
            r"|\bsystem\s+prompt\b|\bsystem\s+message\b|\bdeveloper\s+(?:message|mode)\b"
            r"|\b(?:prior|previous|above|earlier|original)\s+instructions?\b"
            r"|\bas\s+an\s+(?:ai|assistant|llm|language\s+model)\b"
            r"|\bjailbreak\w*\b|\bprompt\s+injection\b"
            r"|(?:^|\n)[ \t]*(?:system|assistant|user|developer)[ \t]*:"
            r"|<\|[a-z_ ]+\|>|\[/?INST\]|<<\s*SYS\s*>>",
            re.IGNORECASE,
        ),
    ),
    (
        "url",
        re.compile(
            r"\b(?:https?|ftp|file|data|javascript)://[^\s<>\"']+|\bwww\.[^\s<>\"']+"
            r"|\b(?:data|javascript):[^\s<>\"']+",
            re.IGNORECASE,
        ),
    ),
]

# Characters a reviewer cannot see: zero-width and joiners, bidi embeddings/overrides/isolates
# (the "Trojan Source" class), invisible operators, the BOM, and Unicode tag characters (which
# can spell out a whole ASCII instruction invisibly).
_HIDDEN = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f"
    "\U000e0100-\U000e01ef]+"
)


def is_hidden(char: str) -> bool:
    """Whether a reviewer could not see this character in a browser."""
    return bool(_HIDDEN.fullmatch(char)) or (
        char not in "\t\n\r" and unicodedata.category(char) == "Cc"
    )


def _controls(text: str) -> list[Finding]:
    """C0/C1 control characters other than tab and newline: invisible in a browser."""
    out = []
    for index, char in enumerate(text):
        if char not in "\t\n\r" and unicodedata.category(char) == "Cc":
            out.append(Finding(HIDDEN_CHARACTERS, "control-character", index, index + 1, char))
    return out


# A letter's own name: "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I" names an "I";
# "LATIN LETTER SMALL CAPITAL G" (small capitals, which TR39 folds to no ASCII letter) a "g".
_LETTER_NAME = re.compile(r"\b(CAPITAL|SMALL) LETTER (?:.* )?([A-Z])$")
_SMALL_CAPITAL = re.compile(r"\bLETTER SMALL CAPITAL ([A-Z])$")
# Breaks a model reads as a line's or a sentence's end, folded to the ASCII one: the line and
# paragraph separators, NEL, and the full stops of other scripts (ideographic, Arabic, Devanagari)
_LINE_BREAKS = {"\u2028", "\u2029", "\x85", "\x0b", "\x0c"}
_FULL_STOPS = {"\u3002", "\u06d4", "\u0964", "\u0965", "\u061f", "\u203c", "\u2047"}


@functools.lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """What a reader (or a model) takes `char` for, in ASCII where it imitates ASCII: its
    compatibility decomposition without combining marks, each remaining non-ASCII letter
    folded to the ASCII look-alike TR39's confusables list for it."""
    if char in _LINE_BREAKS:
        return "\n"
    out = []
    for part in unicodedata.normalize("NFKD", char):
        if part.isascii():
            out.append(part)
            continue
        if part in _FULL_STOPS:
            out.append(".")
            continue
        if unicodedata.category(part) in ("Mn", "Me"):
            continue
        looks_like = [
            h["c"] for h in confusables_data.get(part, ()) if h["c"].isascii() and h["c"].isalnum()
        ]
        name = unicodedata.name(part, "")
        named = _LETTER_NAME.search(name)
        small_capital = _SMALL_CAPITAL.search(name)
        if (
            looks_like
            and looks_like[0] == "l"
            and ((named and named.group(2) == "I") or (part.isupper() and not named))
        ):
            # TR39's prototype of every I-like letter is "l", which would hide "Ignore": a
            # letter named I, or a capital of a script that names no Latin letter (Cherokee's
            # QUA, Lisu's), is read as the I it imitates
            out.append("i" if named and named.group(1) == "SMALL" else "I")
        elif small_capital:
            out.append(small_capital.group(1).lower())
        else:
            out.append(looks_like[0] if looks_like else part)
    return "".join(out)


def fold(text: str) -> tuple[str, list[int]]:
    """`text` folded for the rules (module docstring), and for each folded character the index
    of the original one it came from."""
    folded: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char.isascii() and char.isprintable():
            parts = char
        elif _HIDDEN.fullmatch(char):
            continue
        else:
            parts = _fold_char(char)
        for part in parts:
            if part == "_":
                # an identifier's words (`ignore_previous_instructions`, a content key) read
                # as the words they spell
                part = " "
            elif part.isupper() and folded and folded[-1].islower():
                # and a camelCase one's (`IgnorePreviousInstructions`)
                folded.append(" ")
                origin.append(index)
            folded.append(part)
            origin.append(index)
    return "".join(folded), origin


def _starts_sentence(folded: str, start: int) -> bool:
    """Whether the word at `start` begins a sentence or a line (`_SENTENCE_ENDS`): only space,
    then the text's start, a sentence's end or a bullet that itself starts one, lie before it."""
    at = start - 1
    while at >= 0 and folded[at].isspace():
        if folded[at] == "\n":
            return True
        at -= 1
    if at < 0 or folded[at] in _SENTENCE_ENDS:
        return True
    if folded[at] in _BULLETS and at < start - 1:
        before = at - 1
        return before < 0 or folded[before].isspace() or folded[before] in _SENTENCE_ENDS
    return False


# A word that mixes Latin letters with letters of another script (`ᏆGNORE`, Cherokee and
# Latin; `paypal` with a Cyrillic a) spells one thing to the eye and another to a filter:
# whatever TR39's table misses, a reviewer should see it. Scripts whose words take Latin
# letters beside their own in ordinary writing are not counted.
_WORD = re.compile(r"[^\W\d_]{2,}")
_MIXES_WITH_LATIN = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "FULLWIDTH", "HALFWIDTH"}


@functools.lru_cache(maxsize=4096)
def _script(char: str) -> str:
    """A letter's script, as its Unicode name begins ("LATIN", "CYRILLIC", "CHEROKEE")."""
    return unicodedata.name(char, "").partition(" ")[0]


def _mixed_scripts(text: str) -> list[Finding]:
    out = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            continue
        scripts = {_script(c) for c in word if unicodedata.category(c).startswith("L")}
        if "LATIN" in scripts and scripts - {"LATIN"} - _MIXES_WITH_LATIN:
            out.append(Finding(HIDDEN_CHARACTERS, "mixed-script", match.start(), match.end(), word))
    return out


# A run of base64 long enough to carry a sentence: decoded, its text is read by the same rules
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")


def _decoded(token: str) -> str | None:
    """The text a base64 (or base64url) `token` encodes, when it encodes text at all."""
    padded = token + "=" * (-len(token) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    printable = sum(c.isprintable() or c.isspace() for c in text)
    return text if text and printable >= 0.9 * len(text) else None


def detect(
    text: str,
    *,
    tool_names: list[str] | tuple[str, ...] = (),
    encoded: bool = True,
    imperatives: bool = True,
) -> list[Finding]:
    """Every finding in `text`, in order of position. Empty: nothing reads like an instruction
    and nothing is hidden. The instruction rules read the folded text (`fold`); each span is
    the original text's. With `encoded`, a base64 run whose decoded text reads like an
    instruction is one too (decoded once: an encoding of an encoding is not unwrapped). Without
    `imperatives`, a verb starting the text is not a finding: an identifier (`call_8f2a`, a tool
    call's id) starts with one as often as not."""
    findings: list[Finding] = []
    folded, origin = fold(text)

    def found(rule: str, start: int, end: int) -> None:
        # the sentence-start lookbehinds leave leading whitespace inside the match
        while start < end and folded[start].isspace():
            start += 1
        if start < end:
            first, last = origin[start], origin[end - 1] + 1
            findings.append(Finding(INSTRUCTION_LIKE, rule, first, last, text[first:last]))

    for match in _IMPERATIVE.finditer(folded) if imperatives else ():
        if _starts_sentence(folded, match.start()):
            found("imperative", *match.span())
    for rule, pattern in _RULES:
        for match in pattern.finditer(folded):
            found(rule, *match.span())
    names = sorted({fold(n)[0] for n in tool_names if len(n) >= 3}, key=len, reverse=True)
    if names:
        pattern = re.compile(
            r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])",
            re.IGNORECASE,
        )
        for match in pattern.finditer(folded):
            found("tool-name", *match.span())
    if encoded:
        for match in _BASE64.finditer(text):
            decoded = _decoded(match.group())
            if decoded is not None and any(
                f.reason == INSTRUCTION_LIKE
                for f in detect(decoded, tool_names=tool_names, encoded=False)
            ):
                findings.append(
                    Finding(INSTRUCTION_LIKE, "encoded", match.start(), match.end(), match.group())
                )
    findings.extend(
        Finding(HIDDEN_CHARACTERS, "invisible", m.start(), m.end(), m.group())
        for m in _HIDDEN.finditer(text)
    )
    findings.extend(_controls(text))
    findings.extend(_mixed_scripts(text))
    return sorted(findings, key=lambda f: (f.start, f.end, f.rule))


def reasons_of(findings: list[Finding], *, wide_scope: bool) -> list[str]:
    """The review reasons, in a fixed order (the seed's first)."""
    fired = {f.reason for f in findings}
    if wide_scope:
        fired.add(WIDE_SCOPE)
    return [r for r in REASONS if r in fired]


def review_text(content: Any) -> str:
    """What a reviewer reads of a fact's content, and what the detector scans: a string as it
    is; else an object's `text` first, then every other value on a line of its own as `path:
    value` (keys sorted). One line each, so that an instruction in any field starts a sentence:
    it is found, and the reviewer sees it. A remembered memory (`{"text"}`) reads as its text."""
    if isinstance(content, str):
        return content
    lines: list[str] = []
    rest = content
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        lines.append(content["text"])
        rest = {k: v for k, v in content.items() if k != "text"}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, Mapping | list | tuple) and not value:
            # an empty object or list still shows its key: an instruction can hide in one
            lines.append(f"{path}: {'{}' if isinstance(value, Mapping) else '[]'}")
        elif isinstance(value, Mapping):
            for key in sorted(value, key=str):
                walk(value[key], f"{path}.{key}" if path else str(key))
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")
        else:
            if value is None or isinstance(value, bool):
                shown = "null" if value is None else str(value).lower()
            else:
                shown = str(value)
            lines.append(f"{path}: {shown}" if path else shown)

    if rest or not lines:
        walk(rest, "")
    return "\n".join(lines)
