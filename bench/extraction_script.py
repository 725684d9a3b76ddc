"""The scripted endpoint's answers (`bench/extraction_quality.py --scripted`): for each
conversation, the dev set's expected memories as the model's decisions (an update naming the
prior memory by the id the prompt showed it under), with the conversation's deliberate fault
(`SCRIPT_FAULTS`) made on top. The figures such answers produce are kindmem's pipeline's (what
it applies, refuses, deduplicates and sends to review), not a model's."""

from __future__ import annotations

import copy
import json
from typing import Any

from bench.extraction_devset import INSTRUCTION_MEMORIES, Conversation

NOTHING = {"action": "none", "type": None, "memory_id": None, "text": None, "cites": []}
MADE_UP_MEMORY = "00000000-0000-4000-8000-000000000000"


def _add(type_: str, text: str, cites: list[int]) -> dict[str, Any]:
    return {"action": "add", "type": type_, "memory_id": None, "text": text, "cites": cites}


def expected_decisions(conv: Conversation, shown: dict[str, Any]) -> list[dict[str, Any]]:
    """The decisions a model that agrees with the dev set answers, given the prompt's
    document `shown`."""
    ids = {m["text"]: m["id"] for m in shown.get("existing_memories", [])}
    out = []
    for memory in conv.expected:
        cites = list(memory.cites)
        if memory.updates is None:
            out.append(_add(memory.type, memory.text, cites))
            continue
        prior = conv.prior[memory.updates]
        out.append(
            {
                "action": "update",
                "type": memory.type,
                "memory_id": ids.get(prior.text, MADE_UP_MEMORY),
                "text": memory.text,
                "cites": cites,
            }
        )
    return out


def scripted_answer(conv: Conversation, shown: dict[str, Any]) -> str:
    """The answer's text: the expected decisions with the conversation's fault."""
    decisions = expected_decisions(conv, shown)
    fault = conv.script
    if fault == "malformed-json":
        return json.dumps({"decisions": decisions})[:70]  # cut off mid-answer
    decisions = copy.deepcopy(decisions)
    last = max(m["id"] for m in shown["messages"])
    if fault == "undeclared-type":
        decisions[0]["type"] = "diagnosis"
    elif fault == "cites-outside-range":
        decisions[0]["cites"] = [*decisions[0]["cites"], last + 5]
    elif fault == "unknown-memory":
        for decision in decisions:
            if decision["action"] == "update":
                decision["memory_id"] = MADE_UP_MEMORY
    elif fault == "duplicate":
        prior = conv.prior[0]
        decisions.append(_add(prior.type, prior.text, [1]))  # known already, word for word
        decisions += [copy.deepcopy(d) for d in decisions[:1] if d["action"] == "add"]
    elif fault == "instruction":
        decisions.append(_add("preference", INSTRUCTION_MEMORIES[conv.id], [1]))
    elif fault == "hidden":
        text = decisions[0]["text"]
        decisions[0]["text"] = text[: len(text) // 2] + "\u200b" + text[len(text) // 2 :]
    return json.dumps({"decisions": decisions or [NOTHING]}, ensure_ascii=False)
