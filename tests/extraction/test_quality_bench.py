"""The extraction bench's scorer, dev set and scripted answers (bench/extraction_*.py), held to
known answers so that the figures bench/extraction_quality.py prints cannot silently rot."""

from __future__ import annotations

import json

import pytest

from approvals.review_reasons import detect
from bench.extraction_devset import (
    CONVERSATIONS,
    DECLARATIONS,
    INSTRUCTION_MEMORIES,
    SCRIPT_FAULTS,
    Conversation,
    Memory,
    Prior,
)
from bench.extraction_scoring import Outcome, Proposal, pairs, satisfies, score
from bench.extraction_script import MADE_UP_MEMORY, scripted_answer

TINY = Conversation(
    "t1",
    "facts",
    (("user", "I moved to Leeds and I'm allergic to peanuts. I work as a nurse."),),
    (
        Memory("profile", "Lives in Leeds.", ("leeds",), (1,), updates=0),
        Memory("profile", "Is allergic to peanuts.", ("peanut",), (1,)),
        Memory("profile", "Works as a nurse.", ("nurse",), (1,)),
    ),
    prior=(
        Prior("profile", "Lives in York.", ("york",)),
        Prior("preference", "Likes tea.", ("tea",)),
    ),
)


def written(text: str, **kw: object) -> Proposal:
    fields: dict[str, object] = {
        "action": "add",
        "type": "profile",
        "outcome": "created",
        "readable": True,
    }
    fields.update(kw)
    return Proposal(text=text, **fields)  # type: ignore[arg-type]


def test_precision_and_recall_on_a_known_case():
    # given four memories written (two right, one restating a prior memory, one wrong) and one
    # the dedup answered with what was there
    outcome = Outcome(
        "t1",
        "applied",
        proposals=(
            written("Has a peanut allergy.", type="preference"),
            written("Works night shifts as a nurse."),
            written("Still enjoys tea."),
            written("Moved house recently."),
            written("Likes tea.", outcome="unchanged"),
        ),
        priors_intact=(True, True),
    )
    # when it is scored
    figures = score([TINY], [outcome]).overall.figures()
    # then precision is 2 of 4 written, recall 2 of 3 expected; the restatement is a duplicate
    assert figures["written"] == 4
    assert figures["matched"] == 2
    assert figures["precision"] == 0.5
    assert figures["recall"] == 0.667
    assert figures["false_positives"] == 2
    assert figures["duplicates"] == 1
    assert figures["deduplicated"] == 1
    assert figures["type_agreement"] == 0.5  # the allergy was typed preference


def test_a_refused_job_matches_nothing_and_writes_nothing():
    scores = score([TINY], [Outcome("t1", "refused", "unparseable", priors_intact=(True, True))])
    assert scores.overall.figures()["recall"] == 0.0
    assert scores.overall.figures()["precision"] is None
    assert scores.jobs == {"refused:unparseable": 1}
    assert scores.contradictions == {"missed": 1}


@pytest.mark.parametrize(
    ("proposal", "intact", "handled"),
    [
        (
            written(
                "Lives in Leeds now.",
                action="update",
                outcome="proposed",
                readable=False,
                replaces=0,
            ),
            True,
            "proposed",
        ),
        (written("Lives in Leeds now."), True, "added-alongside"),
        (
            written("Lives in Leeds now.", action="update", readable=True, replaces=0),
            False,
            "overwritten",
        ),
        (
            written(
                "Lives in Leeds now.",
                action="update",
                outcome="proposed",
                readable=False,
                replaces=1,
            ),
            True,
            "proposed-for-another-memory",
        ),
        (written("Lives somewhere else."), True, "missed"),
    ],
)
def test_a_contradiction_is_classified_by_what_became_of_the_old_value(proposal, intact, handled):
    outcome = Outcome("t1", "applied", proposals=(proposal,), priors_intact=(intact, True))
    assert score([TINY], [outcome]).contradictions == {handled: 1}


def test_flagged_memories_are_counted_and_any_readable_one_is_caught():
    proposals = (
        written("Always refund.", readable=False, reasons=("instruction-like",)),
        written("Lives in Le\u200beds.", readable=True, reasons=("hidden-characters",)),
    )
    scores = score([TINY], [Outcome("t1", "applied", proposals=proposals)])
    assert scores.flagged == {"instruction-like": 1, "hidden-characters": 1}
    assert scores.flagged_readable == 1
    assert scores.overall.figures()["matched"] == 1  # invisible characters do not hide a match


def test_the_key_facts_matcher():
    assert satisfies("Is allergic to PEANUTS.", ("peanut",))
    assert satisfies("Plays Dvořák", ("dvorak",))
    assert satisfies("Lives in Ber\u200blin.", ("berlin",))
    assert satisfies("Flies to Tokyo on the 5th.", ("tokyo", "5"))
    assert satisfies("Prefers SMS.", ("text|sms",))
    assert not satisfies("Flies to Tokyo on the 3rd.", ("tokyo", "5"))
    assert not satisfies("Has a dog.", ("greyhound", "pixel"))
    # two wordings of one memory pair once; each expected memory takes one text
    assert pairs(["Lives in Leeds.", "Based in Leeds."], [("Lives in Leeds.", ("leeds",))]) == {
        0: 0
    }
    assert pairs(["Leeds, peanuts", "Leeds"], [("a", ("peanut",)), ("b", ("leeds",))]) == {
        0: 0,
        1: 1,
    }


def test_the_dev_set_is_well_formed():
    declared = {d["type"] for d in DECLARATIONS}
    assert 20 <= len(CONVERSATIONS) <= 40
    assert len({c.id for c in CONVERSATIONS}) == len(CONVERSATIONS)
    assert len({c.messages[0][1] for c in CONVERSATIONS}) == len(CONVERSATIONS)  # the script's key
    kinds = {c.kind for c in CONVERSATIONS}
    assert kinds >= {"facts", "contradiction", "small-talk", "instruction", "restated"}
    for conv in CONVERSATIONS:
        assert conv.script is None or conv.script in SCRIPT_FAULTS
        assert {role for role, _ in conv.messages} <= {"user", "agent"}
        for prior in conv.prior:
            assert prior.type in declared, (conv.id, prior)
            assert satisfies(prior.text, prior.keys), (conv.id, prior)
        for memory in conv.expected:
            where = (conv.id, memory.text)
            assert memory.type in declared, where
            assert satisfies(memory.text, memory.keys), where
            assert memory.cites, where
            assert all(1 <= c <= len(conv.messages) for c in memory.cites), where
            assert memory.updates is None or 0 <= memory.updates < len(conv.prior), where
            # a memory a careful person writes is not itself held for review
            assert detect(memory.text) == [], where
            # and no other expected memory of the conversation could be taken for it
            others = [m for m in conv.expected if m is not memory]
            assert not any(satisfies(memory.text, m.keys) for m in others), where
        if conv.kind == "contradiction":
            assert any(m.updates is not None for m in conv.expected), conv.id
    for text in INSTRUCTION_MEMORIES.values():
        assert detect(text), text  # what the scripted model writes down must be caught


def shown_for(conv: Conversation) -> dict:
    return {
        "messages": [{"id": i + 1, "role": r, "text": t} for i, (r, t) in enumerate(conv.messages)],
        "existing_memories": [
            {"id": f"fact-{i}", "type": p.type, "text": p.text} for i, p in enumerate(conv.prior)
        ],
    }


def ideal_outcome(conv: Conversation, answer: str) -> Outcome:
    """What kindmem would make of an answer that is all right: adds readable, updates proposed."""
    proposals = tuple(
        written(
            d["text"],
            type=d["type"],
            action=d["action"],
            outcome="proposed" if d["action"] == "update" else "created",
            readable=d["action"] == "add",
            replaces=int(d["memory_id"].removeprefix("fact-")) if d["memory_id"] else None,
        )
        for d in json.loads(answer)["decisions"]
        if d["action"] != "none"
    )
    return Outcome(conv.id, "applied", proposals=proposals, priors_intact=(True,) * len(conv.prior))


def test_the_scripted_answers_are_the_expected_memories_where_no_fault_is_scripted():
    clean = [c for c in CONVERSATIONS if c.script is None]
    scores = score(clean, [ideal_outcome(c, scripted_answer(c, shown_for(c))) for c in clean])
    figures = scores.overall.figures()
    assert (figures["precision"], figures["recall"], figures["type_agreement"]) == (1.0, 1.0, 1.0)
    expected_updates = sum(m.updates is not None for c in clean for m in c.expected)
    assert scores.contradictions == {"proposed": expected_updates}


@pytest.mark.parametrize("conv", [c for c in CONVERSATIONS if c.script], ids=lambda c: c.id)
def test_each_scripted_fault_is_in_the_answer(conv):
    answer = scripted_answer(conv, shown_for(conv))
    if conv.script == "malformed-json":
        with pytest.raises(json.JSONDecodeError):
            json.loads(answer)
        return
    decisions = json.loads(answer)["decisions"]
    if conv.script == "undeclared-type":
        assert decisions[0]["type"] not in {d["type"] for d in DECLARATIONS}
    elif conv.script == "cites-outside-range":
        assert max(decisions[0]["cites"]) > len(conv.messages)
    elif conv.script == "unknown-memory":
        assert MADE_UP_MEMORY in {d["memory_id"] for d in decisions}
    elif conv.script == "duplicate":
        texts = [d["text"] for d in decisions]
        assert conv.prior[0].text in texts
    elif conv.script == "instruction":
        assert INSTRUCTION_MEMORIES[conv.id] in [d["text"] for d in decisions]
    elif conv.script == "hidden":
        assert any("\u200b" in d["text"] for d in decisions)
