"""Checking the model's answer against what it was shown, before anything is written.

An answer is taken whole or not at all: one that does not parse, carries more decisions than
one extraction may, names a type the agent does not declare, cites a message that was not
shown, or names a memory it was not shown (another person's, another tenant's, a made-up id)
is refused with a code, recorded on the job, and writes nothing. A strict structured-output
server cannot produce most of these; a lenient one, a confused model or a conversation that
talks the model into it can, which is why the check never trusts the schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from extraction.models import Action
from extraction.prompt import Prompt

# The refusal codes a job records (`ExtractionJob.error_code`), each with a test.
UNPARSEABLE = "unparseable"
MODEL_REFUSAL = "model-refusal"
TRUNCATED = "truncated"
TOO_MANY_DECISIONS = "too-many-decisions"
UNDECLARED_TYPE = "undeclared-type"
CITES_OUTSIDE_RANGE = "cites-outside-range"
UNKNOWN_MEMORY = "unknown-memory"
INVALID_TEXT = "invalid-text"


class Refused(Exception):
    """The job is refused whole: `code` says why (one of the codes above, or the code of the
    write that was refused: `erasure-in-progress`, `invalid-fact`, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Decision:
    index: int
    action: str  # Action.ADD or Action.UPDATE ("none" decisions are counted, not kept)
    type: str
    text: str
    cited: tuple[int, ...]
    memory_id: str | None = None


@dataclass(frozen=True)
class Checked:
    decisions: list[Decision]
    nothing: int  # "none" decisions


def answer_check(text: str, prompt: Prompt, *, max_decisions: int, max_chars: int) -> Checked:
    """The decisions of the model's answer `text`, each checked against `prompt`; `Refused`
    for the first fault found, and then none of them is applied."""
    try:
        answer = json.loads(text)
    except ValueError:
        raise Refused(UNPARSEABLE, "The model's answer is not JSON.") from None
    items = answer.get("decisions") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise Refused(UNPARSEABLE, 'The model\'s answer has no "decisions" list.')
    if len(items) > max_decisions:
        raise Refused(
            TOO_MANY_DECISIONS,
            f"The model's answer carries {len(items)} decisions; at most {max_decisions} count.",
        )
    decisions: list[Decision] = []
    nothing = 0
    for index, item in enumerate(items):
        where = f"Decision {index + 1}"
        if not isinstance(item, dict):
            raise Refused(UNPARSEABLE, f"{where} is not an object.")
        action = item.get("action")
        if action == "none":
            nothing += 1
            continue
        if action not in Action.values:
            raise Refused(UNPARSEABLE, f"{where}: unknown action {_short(action)}.")
        decisions.append(_decision(index, where, action, item, prompt, max_chars))
    return Checked(decisions=decisions, nothing=nothing)


def _decision(
    index: int, where: str, action: str, item: dict[str, Any], prompt: Prompt, max_chars: int
) -> Decision:
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise Refused(INVALID_TEXT, f"{where}: a memory needs a text.")
    if len(text) > max_chars or "\x00" in text:
        raise Refused(INVALID_TEXT, f"{where}: the text is longer than {max_chars} characters.")
    cites = item.get("cites")
    if (
        not isinstance(cites, list)
        or not cites
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in cites)
    ):
        raise Refused(UNPARSEABLE, f"{where}: cites must name at least one message id.")
    outside = sorted({c for c in cites if c not in prompt.sequences})
    if outside:
        raise Refused(
            CITES_OUTSIDE_RANGE,
            f"{where} cites messages it was not shown: {', '.join(map(str, outside[:10]))}.",
        )
    type_ = item.get("type")
    memory_id = item.get("memory_id")
    if action == Action.UPDATE:
        memory = prompt.memories.get(memory_id) if isinstance(memory_id, str) else None
        if memory is None:
            raise Refused(
                UNKNOWN_MEMORY, f"{where} names a memory it was not shown: {_short(memory_id)}."
            )
        if type_ not in (None, memory.type):
            raise Refused(
                UNDECLARED_TYPE, f"{where} changes memory {memory_id}'s type to {_short(type_)}."
            )
        type_ = memory.type
    elif memory_id is not None:
        raise Refused(UNPARSEABLE, f"{where}: an add names no memory_id.")
    if not isinstance(type_, str) or type_ not in prompt.declared:
        raise Refused(
            UNDECLARED_TYPE, f"{where} names a type the agent does not declare: {_short(type_)}."
        )
    return Decision(
        index=index,
        action=action,
        type=type_,
        text=text,
        cited=tuple(sorted(set(cites))),
        memory_id=memory_id if action == Action.UPDATE else None,
    )


def _short(value: object) -> str:
    """A value of the answer in a message: quoted and short (it is the model's, not ours)."""
    return repr(value)[:80]
