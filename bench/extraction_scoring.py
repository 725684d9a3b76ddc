"""Scoring an extraction run against the development set (bench/extraction_devset.py): plain
functions of what kindmem wrote, with no database, so tests/extraction/test_quality_bench.py
can hold them to known answers.

**The matcher: key facts.** A text is normalised (Unicode NFKD, accents and invisible format
characters such as U+200B dropped, lower-cased) and cut into words of letters and digits. It
*satisfies* an expected memory when, for every one of the memory's keys, one of the key's
alternatives (`a|b`) is the start of one of its words ("peanut" matches "peanuts", "diabet"
matches "diabetic", "5" matches "5th"). A proposed memory and an expected one *match* when the
proposal satisfies the expected memory's keys; within one conversation, proposals and expected
memories are paired by a maximum matching (each used once), preferring pairs whose words
overlap most (Jaccard), so two paraphrases of one memory count once. The type is not part of
the match; the share of matched pairs whose type agrees is reported beside.

**The figures.**
- *written*: the decisions that wrote something (a new memory, or a proposed supersede); a
  decision the content dedup answered with what was there already (`unchanged`) wrote nothing
  and is counted apart, as *deduplicated*.
- *precision* = matched written / written; a written memory that restates a prior memory in
  other words is a *duplicate* (not matched, so it costs precision).
- *recall* = matched expected / expected, over every expected memory (a refused job matches
  none of its conversation's).
- *contradictions*: each expected memory that revises a prior one is `proposed` (a proposed
  supersede of that prior memory, with a matching text, waiting for a reviewer, the prior
  value still what readers read), `added-alongside` (a new memory with the new value while the
  old one stays current: two contradicting memories), `overwritten` (the prior value is no
  longer what readers read without anyone approving it), `proposed-for-another-memory` (the
  new value proposed as the next value of the wrong memory) or `missed`.
- *review*: written memories whose text the detectors flagged (instruction-like, hidden
  characters), and how many of those anyone can read unreviewed (kindmem's promise: 0).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.extraction_devset import Conversation

FLAGGING_REASONS = ("instruction-like", "hidden-characters")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Proposal:
    """One decision of an applied job and what it wrote."""

    action: str  # add | update
    type: str
    text: str
    outcome: str  # created | proposed | unchanged
    readable: bool  # readers read it now (no review waits on it)
    reasons: tuple[str, ...] = ()
    replaces: int | None = None  # an update's: the index of the prior memory it would replace


@dataclass(frozen=True)
class Outcome:
    """What one conversation's extraction did."""

    conversation: str
    status: str  # applied | refused | failed
    error_code: str = ""
    proposals: tuple[Proposal, ...] = ()
    # each prior memory: still the very revision readers read (no one replaced it)
    priors_intact: tuple[bool, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0


def words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if unicodedata.category(c) not in {"Mn", "Cf"}).casefold()
    return _WORD.findall(kept)


def satisfies(text: str, keys: Iterable[str]) -> bool:
    """Whether `text` carries every key fact (see the module docstring)."""
    have = words(text)
    return all(
        any(w.startswith(alt) for alt in key.casefold().split("|") for w in have) for key in keys
    )


def overlap(a: str, b: str) -> float:
    x, y = set(words(a)), set(words(b))
    return len(x & y) / len(x | y) if x | y else 0.0


def pairs(texts: Sequence[str], targets: Sequence[tuple[str, tuple[str, ...]]]) -> dict[int, int]:
    """A maximum matching of `texts` to `targets` (each a text and its keys): text index ->
    target index, a pair allowed where the text satisfies the target's keys."""
    allowed = {
        i: sorted(
            (j for j, (_, keys) in enumerate(targets) if satisfies(text, keys)),
            key=lambda j, t=text: -overlap(t, targets[j][0]),
        )
        for i, text in enumerate(texts)
    }
    owner: dict[int, int] = {}  # target -> text

    def augment(i: int, seen: set[int]) -> bool:
        for j in allowed[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(texts)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


@dataclass
class Tally:
    expected: int = 0
    matched: int = 0
    written: int = 0
    true_positive: int = 0
    duplicates: int = 0
    deduplicated: int = 0
    type_agrees: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def figures(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "written": self.written,
            "matched": self.matched,
            "precision": round(self.true_positive / self.written, 3) if self.written else None,
            "recall": round(self.matched / self.expected, 3) if self.expected else None,
            "false_positives": self.written - self.true_positive,
            "duplicates": self.duplicates,
            "deduplicated": self.deduplicated,
            "type_agreement": (
                round(self.type_agrees / self.true_positive, 3) if self.true_positive else None
            ),
        }


@dataclass
class Scores:
    overall: Tally = field(default_factory=Tally)
    by_kind: dict[str, Tally] = field(default_factory=dict)
    contradictions: Counter[str] = field(default_factory=Counter)
    jobs: Counter[str] = field(default_factory=Counter)  # applied, refused:<code>, failed:<code>
    decisions: Counter[str] = field(default_factory=Counter)  # what the written ones became
    flagged: Counter[str] = field(default_factory=Counter)
    flagged_readable: int = 0
    per_conversation: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "overall": self.overall.figures(),
            "by_kind": {k: t.figures() for k, t in sorted(self.by_kind.items())},
            "contradictions": dict(self.contradictions),
            "jobs": dict(sorted(self.jobs.items())),
            "decisions": dict(sorted(self.decisions.items())),
            "flagged": dict(self.flagged),
            "flagged_readable": self.flagged_readable,
            "per_conversation": self.per_conversation,
        }


def conversation_score(conv: Conversation, outcome: Outcome) -> tuple[Tally, Counter[str]]:
    """The tally of one conversation, and its contradictions' handling."""
    tally = Tally(expected=len(conv.expected))
    handling: Counter[str] = Counter()
    wrote = [p for p in outcome.proposals if p.outcome != "unchanged"]
    tally.deduplicated = len(outcome.proposals) - len(wrote)
    tally.written = len(wrote)
    matched = pairs([p.text for p in wrote], [(m.text, m.keys) for m in conv.expected])
    tally.matched = tally.true_positive = len(matched)
    tally.type_agrees = sum(1 for i, j in matched.items() if wrote[i].type == conv.expected[j].type)
    # of what matched nothing, what restates a prior memory
    rest = [i for i in range(len(wrote)) if i not in matched]
    restated = pairs([wrote[i].text for i in rest], [(p.text, p.keys) for p in conv.prior])
    tally.duplicates = len(restated)
    for j, memory in enumerate(conv.expected):
        if memory.updates is None:
            continue
        by = [wrote[i] for i, k in matched.items() if k == j]
        intact = (
            outcome.priors_intact[memory.updates]
            if memory.updates < len(outcome.priors_intact)
            else True
        )
        if not intact:
            handling["overwritten"] += 1
        elif by and by[0].action == "update" and by[0].replaces == memory.updates:
            handling["proposed" if not by[0].readable else "overwritten"] += 1
        elif by and by[0].action == "update":
            handling["proposed-for-another-memory"] += 1
        elif by:
            handling["added-alongside"] += 1
        else:
            handling["missed"] += 1
    return tally, handling


def score(conversations: Sequence[Conversation], outcomes: Sequence[Outcome]) -> Scores:
    """The run's scores: `outcomes[i]` is what the extraction of `conversations[i]` did."""
    scores = Scores()
    for conv, outcome in zip(conversations, outcomes, strict=True):
        assert conv.id == outcome.conversation, (conv.id, outcome.conversation)
        tally, handling = conversation_score(conv, outcome)
        scores.overall.add(tally)
        scores.by_kind.setdefault(conv.kind, Tally()).add(tally)
        scores.contradictions.update(handling)
        scores.jobs[
            outcome.status
            if outcome.status == "applied"
            else f"{outcome.status}:{outcome.error_code}"
        ] += 1
        for p in outcome.proposals:
            if p.outcome == "unchanged":
                scores.decisions["unchanged (deduplicated)"] += 1
            elif p.outcome == "proposed":
                scores.decisions["proposed supersede"] += 1
            elif p.readable:
                scores.decisions["created, readable"] += 1
            else:
                scores.decisions["created, waiting for review"] += 1
            flagged = [r for r in p.reasons if r in FLAGGING_REASONS]
            if flagged and p.outcome != "unchanged":
                scores.flagged.update(flagged)
                scores.flagged_readable += p.readable
        scores.per_conversation.append(
            {
                "conversation": conv.id,
                "kind": conv.kind,
                "job": outcome.status,
                "error_code": outcome.error_code,
                **{
                    k: v
                    for k, v in tally.figures().items()
                    if k in {"expected", "written", "matched", "duplicates", "deduplicated"}
                },
                "contradictions": dict(handling),
                "proposals": [
                    {
                        "action": p.action,
                        "type": p.type,
                        "text": p.text,
                        "outcome": p.outcome,
                        "readable": p.readable,
                        "reasons": list(p.reasons),
                    }
                    for p in outcome.proposals
                ],
            }
        )
    return scores
