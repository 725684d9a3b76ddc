"""A development set for retrieval quality: synthetic conversations and facts about people, with
questions whose evidence is known. Generated from a seed, deterministic, no outside data.

LoCoMo and LongMemEval are kept for independent evaluation (issue 16): nothing here comes from
them. The shape is the one such sets have, written from scratch:

- Each person talks with an agent over several sessions. Most of their events (a painting, a
  trip, a new job, a pet, ...) are said once, in the first person ("I painted a sunrise over the
  lake last weekend"); around them are small talk, agent replies that echo the topic, and
  passing mentions of the same words in other contexts. The same event is also written as a
  fact ("Painted a sunrise over the lake last weekend", sometimes with the person's name).
- Questions name the person and ask about one event, in the words an agent would use: a direct
  question ("When did Melanie paint a sunrise over the lake?"), often with conversational
  padding ("Do you remember ..."), or a paraphrase that shares few words with the evidence
  ("When did Melanie make a picture of the dawn above the water?"). A few ask about every
  event of one kind ("What has Melanie painted?"), with several pieces of evidence.

The question's words are therefore spread over the evidence and elsewhere (the person's name
is not in a first-person turn), which is what natural-language questions to a memory look like.

`generate(seed)` returns a `DevSet`; the same seed gives the same set (its vectors are cached by
bench/retrieval_quality.py).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from bench.devset_vocabulary import (
    AGENT_SMALL,
    ALL_QUESTIONS,
    MENTION,
    NOTES,
    NOUNS,
    OTHERS,
    PADDING,
    PEOPLE,
    PRONOUNS,
    SMALL_TALK,
    TEMPLATES,
    WHEN,
)


@dataclass(frozen=True)
class Turn:
    id: str
    person: str  # the person (participant) whose conversation it is
    session: int
    sequence: int
    role: str  # "user" or "agent"
    text: str


@dataclass(frozen=True)
class DevFact:
    id: str
    person: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    person: str
    text: str
    style: str  # "direct", "padded", "paraphrase", "all"
    turn_evidence: tuple[str, ...]  # Turn ids
    fact_evidence: tuple[str, ...]  # DevFact ids


@dataclass
class DevSet:
    seed: int
    turns: list[Turn] = field(default_factory=list)
    facts: list[DevFact] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


class _Slot:
    def __init__(self, value: dict[str, str], my: str) -> None:
        self.t = value["t"].replace("{my}", my)
        self.p = value["p"].replace("{my}", my)
        self.cap = self.t[:1].upper() + self.t[1:]
        self.noun = NOUNS.get(self.t, self.t)

    def __str__(self) -> str:
        return self.t

    def __format__(self, spec: str) -> str:
        return format(self.t, spec)


def _fill(template: str, slots: dict[str, dict[str, str]], *, my: str, **extra: str) -> str:
    values = {k: _Slot(val, my) for k, val in slots.items()}
    text = template.replace("{my}", my)
    return text.format(**values, my=my, **extra)


def _identifies(question: str, e: int, events: list) -> bool:
    """Whether `question` (a template) names event `e` alone among the person's events of its
    kind: no other such event has the same values in every slot the question mentions."""
    template, slots = events[e]
    named = {m for m in re.findall(r"\{(\w+)", question) if m in slots}
    return not any(
        other is not e and t is template and all(s[k]["t"] == slots[k]["t"] for k in named)
        for other, (t, s) in enumerate(events)
        if other != e
    )


def _someone_else(rng: random.Random, events: list) -> str:
    """Someone else's event of a kind the person talks about: the same topic and often the same
    words ("My coworker painted a bowl of lemons in May"), never evidence for the person."""
    template, slots = rng.choice(events)
    other = {k: rng.choice(vals) for k, vals in template["slots"].items()}
    other["when"] = rng.choice(WHEN)
    if rng.random() < 0.3:
        other[template["key"]] = slots[template["key"]]
    body = _fill(template["fact"], other, my="their")
    who = rng.choice(OTHERS)
    return f"{who}{body}" if body.startswith("'s") else f"{who} {body}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def generate(
    seed: int,
    *,
    people: int = 14,
    events_per_person: int = 40,
    kinds_per_person: int = 8,
    sessions: int = 8,
) -> DevSet:
    """The development set of `seed`: `people` people, each with `events_per_person` events
    told over `sessions` sessions of conversation, their facts, and questions."""
    rng = random.Random(seed)
    out = DevSet(seed=seed)
    chosen_people = rng.sample(PEOPLE, people)
    for p_index, (name, gender) in enumerate(chosen_people):
        person = f"person-{p_index}"
        _, obj, poss = PRONOUNS[gender]
        # Events: a template and slot values, the template's key slot distinct per person.
        # A person's life has a few themes: their events come from `kinds_per_person` kinds, so
        # several events share a kind and only their particulars tell them apart.
        kinds = rng.sample(TEMPLATES, kinds_per_person)
        events = []
        used: set[tuple[str, str]] = set()
        while len(events) < events_per_person and kinds:
            template = rng.choice(kinds)
            slots = {k: rng.choice(vals) for k, vals in template["slots"].items()}
            if "when" not in slots:
                slots["when"] = rng.choice(WHEN)
            ident = (template["kind"], slots[template["key"]]["t"])
            if ident in used:
                taken = sum(1 for kind, _ in used if kind == template["kind"])
                if taken == len(template["slots"][template["key"]]):
                    kinds.remove(template)  # every value of its key slot is used
                continue
            used.add(ident)
            events.append((template, slots))
        # Words an event is about, for passing mentions elsewhere in the conversation.
        words = sorted(
            {val["t"].replace("{my}", "my") for template, slots in events for val in slots.values()}
        )
        # Conversation: the events in order over the sessions, each in a block of turns.
        turn_of_event: dict[int, str] = {}
        per_session = max(1, len(events) // sessions)
        for s in range(sessions):
            block = events[s * per_session : (s + 1) * per_session]
            if s == sessions - 1:
                block = events[s * per_session :]
            turns: list[tuple[str, str, int | None]] = [
                ("user", rng.choice(SMALL_TALK), None),
                ("agent", rng.choice(AGENT_SMALL), None),
            ]
            for template, slots in block:
                e = events.index((template, slots))
                if rng.random() < 0.7:
                    turns.append(("user", rng.choice(MENTION).format(word=rng.choice(words)), None))
                    turns.append(("agent", rng.choice(AGENT_SMALL), None))
                if rng.random() < 0.8:
                    turns.append(("user", _someone_else(rng, events), None))
                    turns.append(("agent", rng.choice(AGENT_SMALL), None))
                said = _sentence(_fill(rng.choice(template["say"]), slots, my="my"))
                if rng.random() < 0.4:  # people rarely say one thing per turn
                    said = f"{rng.choice(SMALL_TALK)} {said}"
                turns.append(("user", said, e))
                turns.append(("agent", _fill(rng.choice(template["echo"]), slots, my="your"), None))
                if rng.random() < 0.5:
                    turns.append(("user", rng.choice(SMALL_TALK), None))
                    turns.append(("agent", rng.choice(AGENT_SMALL), None))
            for seq, (role, text, event) in enumerate(turns, start=1):
                tid = f"{person}-s{s}-t{seq}"
                out.turns.append(Turn(tid, person, s, seq, role, text))
                if event is not None:
                    turn_of_event[event] = tid
        # Facts: every event, half of them naming the person, and notes around them.
        fact_of_event: dict[int, str] = {}
        for e, (template, slots) in enumerate(events):
            body = _fill(template["fact"], slots, my=poss)
            if body.startswith("'s"):
                text = f"{name}{body}"
            elif rng.random() < 0.5:
                text = f"{name} {body}"
            else:
                text = _sentence(body)
            fid = f"{person}-f{e}"
            out.facts.append(DevFact(fid, person, text))
            fact_of_event[e] = fid
        for n in range(events_per_person):
            if rng.random() < 0.5:
                text = f"{name} says: {_someone_else(rng, events)}"
            else:
                note = rng.choice(NOTES).format(word=rng.choice(words))
                text = f"{name} {note}" if rng.random() < 0.5 else _sentence(note)
            out.facts.append(DevFact(f"{person}-n{n}", person, text))
        # Questions: one per event (direct, padded or paraphrased), and "all of a kind" ones. A
        # question names enough of its event that no other event of the person answers it.
        them = {"them": obj, "their": poss, "name": name}
        for e, (template, slots) in enumerate(events):
            roll = rng.random()
            style = "direct" if roll < 0.35 else "padded" if roll < 0.7 else "paraphrase"
            pool = template["para"] if style == "paraphrase" else template["ask"]
            pool = [q for q in pool if _identifies(q, e, events)] or [
                q for q in template["ask"] if _identifies(q, e, events)
            ]
            q = _fill(rng.choice(pool), slots, my=poss, **them)
            if style == "padded":
                q = rng.choice(PADDING).format(q=q[:1].lower() + q[1:])
            out.questions.append(
                Question(
                    id=f"{person}-q{e}",
                    person=person,
                    text=_sentence(q),
                    style=style,
                    turn_evidence=(turn_of_event[e],),
                    fact_evidence=(fact_of_event[e],),
                )
            )
        by_kind: dict[str, list[int]] = {}
        for e, (template, _) in enumerate(events):
            by_kind.setdefault(template["kind"], []).append(e)
        several = sorted(kind for kind, indexes in by_kind.items() if len(indexes) > 1)
        for kind in rng.sample(several, min(ALL_QUESTIONS, len(several))):
            template = next(t for t in TEMPLATES if t["kind"] == kind)
            out.questions.append(
                Question(
                    id=f"{person}-all-{kind}",
                    person=person,
                    text=template["all"].format(name=name),
                    style="all",
                    turn_evidence=tuple(turn_of_event[e] for e in by_kind[kind]),
                    fact_evidence=tuple(fact_of_event[e] for e in by_kind[kind]),
                )
            )
    return out


if __name__ == "__main__":
    import argparse
    from collections import Counter

    parser = argparse.ArgumentParser(description="Print a sample of the development set.")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    dev = generate(args.seed)
    print(f"turns {len(dev.turns)}, facts {len(dev.facts)}, questions {len(dev.questions)}")
    print(Counter(q.style for q in dev.questions))
    for t in dev.turns[:24]:
        print(f"  {t.id:18} {t.role:5} {t.text}")
    for f in dev.facts[:6]:
        print(f"  {f.id:18} {f.text}")
    for q in dev.questions[:12] + dev.questions[-4:]:
        print(f"  {q.id:22} {q.style:10} {q.text}  -> {q.turn_evidence}")
