"""A development set shaped like the job (issue 45): long multi-session conversations between
a person and their agent, with dated sessions, small talk, people who change their minds,
paraphrased and indirect questions, multi-hop and temporal questions, and questions the memory
cannot answer. Generated from readable rules, seeded and deterministic; nothing is taken from
LoCoMo or LongMemEval (kept for independent evaluation).

The rules, per conversation (one person, `SESSIONS` dated sessions 2-9 days apart):

- Life facts (`TOPICS`): each person has 12 of the 18 topics (a pet, a job, a city, a car,
  ...), each with a value drawn from its list. It is said once, in the first person, in one
  session's user turn ("We adopted a beagle puppy and called him Biscuit"); the agent echoes it
  in the words of the topic ("How is the new pet settling in?"), and a distractor turn elsewhere
  shares the topic's words ("My neighbour's dog barked all night").
- Changes of mind: for a third of the topics the person later says the value changed ("Scrap
  the Lisbon plan, we're going to Porto"); the question's evidence is then the later turn only.
- Relations (multi-hop): two people close to the person are named in one turn ("My sister
  Lena ...") and something happens to them, by name only, in a later session ("Lena moved to
  Ghent"); the question asks by relation ("Where does Ana's sister live now?"): both turns are
  evidence.
- Plans (temporal): most sessions have one "this weekend I plan to ..." turn; questions ask for
  the plan of a week that only the session dates pin down: "the week after the move" (the move is
  a topic, said in a known session), or a calendar date ("the week of 12 March 2024").
- Small talk: greetings, weather, thanks, in every session, user and agent alike.
- Questions never repeat the evidence's words where the topic gives a paraphrase: they name the
  person in the third person and ask with the topic's question words ("What is the name of Ana's
  animal?" for "called him Biscuit"), and carry conversational padding at times.
- No answer (>= 20%): questions about topics the person never brought up, about relations they
  never named, and plans for weeks with no session.

`generate(seed)` gives a `ConvSet`; conversations alternate between the tuning and the held-out
split (`Conversation.split`). `python bench/convset.py --write` writes bench/data/convset.json
(to read the set, not needed by the bench, which generates it).
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path

CONVERSATIONS = 36
SESSIONS = 16
TOPICS_PER_PERSON = 12

PEOPLE = [
    ("Ana", "she"),
    ("Bilal", "he"),
    ("Chiara", "she"),
    ("Dmitri", "he"),
    ("Efua", "she"),
    ("Farid", "he"),
    ("Greta", "she"),
    ("Hiroshi", "he"),
    ("Ines", "she"),
    ("Jonas", "he"),
    ("Keiko", "she"),
    ("Luis", "he"),
    ("Maren", "she"),
    ("Nikhil", "he"),
    ("Olga", "she"),
    ("Pavel", "he"),
    ("Quinn", "she"),
    ("Rafael", "he"),
    ("Sanna", "she"),
    ("Tomas", "he"),
    ("Uma", "she"),
    ("Viktor", "he"),
    ("Wen", "she"),
    ("Xavier", "he"),
    ("Yara", "she"),
    ("Zoltan", "he"),
    ("Amara", "she"),
    ("Bruno", "he"),
    ("Celine", "she"),
    ("Diego", "he"),
    ("Elif", "she"),
    ("Florin", "he"),
    ("Gwen", "she"),
    ("Hamza", "he"),
    ("Isla", "she"),
    ("Jakub", "he"),
]

# A topic: values; how the person says it first (`say`), how they change their mind (`change`,
# or none), what the agent echoes, a distractor that shares the topic's words, and the
# question's words (a paraphrase: none of the value's or the saying's content words).
TOPICS: dict[str, dict] = {
    "pet": {
        "values": [
            "a beagle puppy called Biscuit",
            "a grey kitten called Mochi",
            "a rescue greyhound called Pepper",
            "two budgies called Kiwi and Mango",
        ],
        "say": ["We finally adopted {v} last Saturday.", "Big news at home: we took in {v}."],
        "change": None,
        "echo": "How is the new arrival settling in at home?",
        "distract": "My neighbour's dog barked all night again, I barely slept.",
        "ask": ["What animal joined {p}'s household?", "Which companion animal does {p} have now?"],
    },
    "job": {
        "values": [
            "a pastry chef at a bakery on the harbour",
            "a data analyst for the city council",
            "a physiotherapist at the sports clinic",
            "a sound engineer at a radio station",
        ],
        "say": [
            "I signed the contract today, I'm starting as {v}.",
            "I got the offer! I'll be working as {v}.",
        ],
        "change": ["I turned that offer down in the end; instead I'm taking a role as {v}."],
        "echo": "Congratulations on the new position, that is a big step.",
        "distract": "My cousin keeps complaining about her boss at the office.",
        "ask": ["What does {p} do for a living these days?", "What is {p}'s occupation now?"],
    },
    "move": {
        "values": ["Porto", "Ghent", "Tallinn", "Valencia", "Kraków", "Bergen"],
        "say": [
            "The boxes are packed; we're relocating to {v} this week.",
            "We just signed a lease in {v} and we're moving there.",
        ],
        "change": None,
        "echo": "Moving house is exhausting, I hope the new place feels like home soon.",
        "distract": "The movers on our street blocked the road for hours this morning.",
        "ask": ["Which city did {p} settle in?", "Where did {p} relocate to?"],
    },
    "trip": {
        "values": ["Lisbon", "Kyoto", "the Scottish Highlands", "Marrakesh", "Iceland"],
        "say": [
            "We booked our summer holiday: ten days in {v}.",
            "For the holidays we're going to {v}.",
        ],
        "change": ["Scrap the earlier holiday plan, we're going to {v} instead."],
        "echo": "A getaway sounds wonderful, you have earned it.",
        "distract": "My colleague showed me endless photos of her cruise.",
        "ask": [
            "Where is {p} spending the summer vacation?",
            "What destination did {p} pick for the time off?",
        ],
    },
    "diet": {
        "values": ["vegetarian", "vegan", "gluten-free", "pescatarian"],
        "say": [
            "Since last month I've been eating {v}, and I feel great.",
            "Doctor's advice: I'm {v} from now on.",
        ],
        "change": ["I gave up on that diet; these days I'm trying to be {v}."],
        "echo": "Good for you, food habits are hard to change.",
        "distract": "The canteen served the same soup three days in a row.",
        "ask": ["What way of eating does {p} follow?", "What are {p}'s food restrictions?"],
    },
    "instrument": {
        "values": ["the cello", "the bass guitar", "the accordion", "the drums", "the violin"],
        "say": [
            "I've signed up for lessons and I'm learning to play {v}.",
            "I bought a second-hand {v2} and practise every evening.",
        ],
        "change": ["I sold it and switched to {v}, it suits me better."],
        "echo": "Music is a lovely thing to pick up.",
        "distract": "Somebody upstairs practises scales at six in the morning.",
        "ask": ["Which instrument is {p} studying?", "What does {p} play musically?"],
    },
    "car": {
        "values": ["a red electric hatchback", "an old green Volvo estate", "a silver hybrid van"],
        "say": [
            "I traded in the old one and bought {v}.",
            "We picked up {v} from the dealer yesterday.",
        ],
        "change": None,
        "echo": "A new set of wheels, exciting!",
        "distract": "Traffic on the ring road was terrible today.",
        "ask": ["What vehicle does {p} drive now?", "What did {p} get to get around?"],
    },
    "sport": {
        "values": ["bouldering", "rowing", "fencing", "trail running", "water polo"],
        "say": [
            "I joined a club and I'm doing {v} twice a week.",
            "My new thing is {v}; the sessions are brutal.",
        ],
        "change": ["I quit that club; now it's {v} on weekends."],
        "echo": "Staying active is so good for the mind.",
        "distract": "The gym near work raised its prices again.",
        "ask": ["Which athletic activity does {p} practise?", "How does {p} keep fit?"],
    },
    "allergy": {
        "values": ["peanuts", "shellfish", "penicillin", "cat hair"],
        "say": [
            "The tests came back: I'm allergic to {v}.",
            "Turns out that rash was a reaction to {v}.",
        ],
        "change": None,
        "echo": "Good that you found out, better safe.",
        "distract": "Pollen season is starting and everyone at work is sneezing.",
        "ask": ["What is {p} intolerant of medically?", "What substance gives {p} a bad reaction?"],
    },
    "course": {
        "values": [
            "an evening class in Japanese",
            "a night course in bookkeeping",
            "an online degree in marine biology",
            "a pottery workshop series",
        ],
        "say": [
            "I enrolled in {v}, first session is Tuesday.",
            "I've started {v}; the homework is a lot.",
        ],
        "change": ["I dropped that and enrolled in {v} instead."],
        "echo": "Learning something new is a great idea.",
        "distract": "My nephew failed his driving theory exam again.",
        "ask": ["What is {p} studying on the side?", "What education did {p} take up?"],
    },
    "book": {
        "values": [
            "a thick biography of Marie Curie",
            "a crime novel set in Oslo",
            "a history of the Silk Road",
        ],
        "say": [
            "On the train I'm reading {v}; I can't put it down.",
            "My bedtime reading at the moment is {v}.",
        ],
        "change": None,
        "echo": "A good read makes the commute fly by.",
        "distract": "The library near us is closing for renovations.",
        "ask": [
            "What literature has {p} got their nose in?",
            "Which title is {p} currently getting through?",
        ],
    },
    "coffee": {
        "values": [
            "oat flat whites",
            "black filter coffee",
            "green tea, no coffee at all",
            "double espressos",
        ],
        "say": ["Every morning it's {v} for me.", "I can't start the day without {v}."],
        "change": ["I changed my morning routine, now it's {v}."],
        "echo": "Mornings need their rituals.",
        "distract": "The café downstairs changed owners and the queue is huge.",
        "ask": ["What does {p} drink to wake up?", "What is {p}'s usual morning beverage?"],
    },
    "garden": {
        "values": ["tomatoes and chillies", "strawberries", "herbs on the balcony", "pumpkins"],
        "say": [
            "I planted {v} this spring and they're sprouting.",
            "I'm growing {v} now, fingers crossed.",
        ],
        "change": None,
        "echo": "Nothing beats home-grown produce.",
        "distract": "The council cut down the old tree in the square.",
        "ask": ["What crops is {p} cultivating?", "What is coming up in {p}'s plot?"],
    },
    "phone": {
        "values": ["a refurbished Pixel", "the cheapest iPhone", "a rugged Nokia"],
        "say": [
            "My screen cracked so I replaced it with {v}.",
            "I switched handsets and went for {v}.",
        ],
        "change": None,
        "echo": "Setting up a new device takes forever.",
        "distract": "My mum called three times during the meeting.",
        "ask": ["Which mobile does {p} carry?", "What handset did {p} end up with?"],
    },
    "volunteer": {
        "values": [
            "at the food bank on Thursdays",
            "at an animal shelter",
            "reading to kids at the library",
        ],
        "say": ["I started volunteering {v}.", "I've been helping out {v}, it's very rewarding."],
        "change": ["I stopped that; now I volunteer {v}."],
        "echo": "Giving your time like that is generous.",
        "distract": "Our street collected money for the school roof.",
        "ask": ["What charity work does {p} do?", "Where does {p} give unpaid help?"],
    },
    "wedding": {
        "values": [
            "in a barn in the countryside",
            "at the registry office, just family",
            "on a beach in Crete",
        ],
        "say": ["We set the date: the wedding will be {v}.", "We decided to get married {v}."],
        "change": ["We changed the plans for the ceremony; it will be {v} now."],
        "echo": "Congratulations to you both!",
        "distract": "My cousin's engagement party went on until three.",
        "ask": ["Where will {p} tie the knot?", "What venue did {p} choose for the marriage?"],
    },
    "injury": {
        "values": ["a sprained ankle", "a fractured wrist", "a torn knee ligament"],
        "say": [
            "I fell off my bike and ended up with {v}.",
            "The X-ray showed {v}, so I'm resting.",
        ],
        "change": None,
        "echo": "Ouch, take it easy while it heals.",
        "distract": "The pavement outside is full of potholes.",
        "ask": ["How did {p} get hurt?", "What was {p}'s medical mishap?"],
    },
    "language": {
        "values": ["Portuguese", "Korean", "Finnish", "Swahili"],
        "say": [
            "I downloaded an app and I practise {v} every day.",
            "I found a tandem partner to practise {v} with.",
        ],
        "change": ["I gave up on that one; I'm learning {v} now."],
        "echo": "Languages open so many doors.",
        "distract": "The subtitles on the film last night were out of sync.",
        "ask": ["Which tongue is {p} picking up?", "What foreign speech is {p} working on?"],
    },
}

RELATIONS = ["sister", "brother", "best friend", "neighbour", "manager", "cousin"]
RELATIVE_NAMES = [
    "Lena",
    "Marco",
    "Priya",
    "Oskar",
    "Noor",
    "Tobias",
    "Freya",
    "Emil",
    "Sofia",
    "Arjun",
]
# what happens to a named relation, and the question that asks for it by relation
RELATIVE_EVENTS = [
    (
        "{n} just moved to {c} for work.",
        "Where does {p}'s {r} live now?",
        ["Dublin", "Lyon", "Seoul", "Quito"],
    ),
    (
        "{n} had a baby girl, they named her {c}.",
        "What is the name of {p}'s {r}'s newborn?",
        ["Alma", "Iris", "June", "Maya"],
    ),
    (
        "{n} finished the {c} marathon in under four hours!",
        "Which race did {p}'s {r} complete?",
        ["Berlin", "Boston", "Tokyo"],
    ),
    (
        "{n} opened a little {c} shop downtown.",
        "What business did {p}'s {r} start?",
        ["bicycle repair", "vinyl record", "cheese"],
    ),
]
INTRODUCE = [
    "My {r} {n} came over for dinner yesterday.",
    "I spent the afternoon with {n}, my {r}.",
]

PLANS = [
    "repaint the hallway",
    "visit the flea market",
    "hike to the lighthouse",
    "bake bread for the neighbours",
    "go to a jazz concert",
    "clean out the garage",
    "take the kids to the zoo",
    "try the new ramen place",
    "drive to the lake",
    "sort out my tax return",
    "build a bookshelf",
    "see a play at the old theatre",
    "go kayaking on the river",
    "host a board game night",
    "visit my grandmother",
]
PLAN_SAY = ["This weekend I'm planning to {a}.", "My plan for the coming days: {a}."]
PLAN_ASK_AFTER = [
    "What did {p} plan to do the week after the move?",
    "What was on {p}'s agenda in the days following the relocation?",
]
PLAN_ASK_DATE = [
    "What did {p} plan for the week of {d}?",
    "What was {p} intending to do around {d}?",
]

SMALL_USER = [
    "Morning! Grey and rainy here again.",
    "Thanks, that helps a lot.",
    "Ha, fair enough.",
    "Anyway, how are you today?",
    "Sorry, long day, I'm a bit scattered.",
    "It's so hot today.",
    "Okay, talk later!",
    "I slept badly, too much coffee probably.",
    "Good evening!",
]
SMALL_AGENT = [
    "Good to hear from you again.",
    "I'm here whenever you need me.",
    "That makes sense.",
    "Take care of yourself today.",
    "Happy to help with that.",
    "Tell me more if you like.",
]
PADDING = ["Quick question: ", "Remind me, ", "Do you remember: ", "I forgot, ", ""]


@dataclass(frozen=True)
class Turn:
    id: str
    person: str
    session: int
    sequence: int
    role: str
    text: str
    at: str  # ISO datetime: the session's date and the turn's minute


@dataclass(frozen=True)
class Question:
    id: str
    person: str
    text: str
    kind: str  # "single", "changed", "multi", "temporal", "none"
    evidence: tuple[str, ...]  # Turn ids; empty for "none"
    split: str


@dataclass
class Conversation:
    person: str
    split: str  # "tune" or "held"
    dates: list[str] = field(default_factory=list)


@dataclass
class ConvSet:
    seed: int
    conversations: list[Conversation] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _fill(text: str, value: str) -> str:
    # "{v2}" is the value without its article ("a second-hand cello"), for sayings that have one
    bare = value.removeprefix("the ").removeprefix("a ").removeprefix("an ")
    return text.replace("{v2}", bare).replace("{v}", value)


def generate(seed: int = 1) -> ConvSet:
    rng = random.Random(seed)
    out = ConvSet(seed=seed)
    for c, (person, _pronoun) in enumerate(PEOPLE[:CONVERSATIONS]):
        split = "tune" if c % 2 == 0 else "held"
        conv = Conversation(person=person, split=split)
        out.conversations.append(conv)
        start = date(2024, 1, 8) + timedelta(days=rng.randrange(0, 60))
        dates = [start]
        for _ in range(SESSIONS - 1):
            dates.append(dates[-1] + timedelta(days=rng.randint(2, 9)))
        conv.dates = [d.isoformat() for d in dates]
        # what each session says, as (role, text, tag); the tags name the evidence
        said: list[list[tuple[str, str, str]]] = [[] for _ in range(SESSIONS)]
        topics = rng.sample(sorted(TOPICS), TOPICS_PER_PERSON)
        if "move" not in topics:
            topics[0] = "move"
        absent = [t for t in sorted(TOPICS) if t not in topics]
        for topic in topics:
            spec = TOPICS[topic]
            first, *later = rng.sample(spec["values"], 2)
            session = rng.randrange(0, SESSIONS - 4) if topic != "move" else rng.randrange(2, 9)
            said[session].append(("user", _fill(rng.choice(spec["say"]), first), f"say:{topic}"))
            said[session].append(("agent", spec["echo"], ""))
            said[rng.randrange(0, SESSIONS)].append(("user", spec["distract"], ""))
            if spec["change"] and rng.random() < 0.45:
                when = rng.randrange(session + 2, SESSIONS)
                said[when].append(
                    ("user", _fill(rng.choice(spec["change"]), later[0]), f"change:{topic}")
                )
        names = rng.sample(RELATIVE_NAMES, 3)
        relations = rng.sample(RELATIONS, 4)  # three named, the fourth never mentioned
        events = rng.sample(RELATIVE_EVENTS, 3)
        for name, relation, (event, _, fillers) in zip(names, relations, events, strict=False):
            intro = rng.randrange(0, SESSIONS - 6)
            said[intro].append(
                ("user", rng.choice(INTRODUCE).format(r=relation, n=name), f"intro:{relation}")
            )
            happening = event.format(n=name, c=rng.choice(fillers))
            said[rng.randrange(intro + 3, SESSIONS)].append(
                ("user", happening, f"event:{relation}")
            )
        plans = rng.sample(PLANS, len(PLANS))
        planned = {}
        for s in range(SESSIONS):
            if rng.random() < 0.8:
                planned[s] = plans[s % len(plans)]
                said[s].append(("user", rng.choice(PLAN_SAY).format(a=planned[s]), f"plan:{s}"))

        tagged: dict[str, str] = {}
        for s, items in enumerate(said):
            rng.shuffle(items)
            session_turns = [
                ("user", rng.choice(SMALL_USER), ""),
                ("agent", rng.choice(SMALL_AGENT), ""),
            ]
            for role, text, tag in items:
                session_turns.append((role, text, tag))
                if role == "user" and rng.random() < 0.5:
                    session_turns.append(("agent", rng.choice(SMALL_AGENT), ""))
            session_turns.append(("user", rng.choice(SMALL_USER), ""))
            for sequence, (role, text, tag) in enumerate(session_turns, start=1):
                turn_id = f"{person}-s{s}-t{sequence}"
                minute = 9 * 60 + 2 * sequence
                at = f"{dates[s].isoformat()}T{minute // 60:02d}:{minute % 60:02d}:00+00:00"
                out.turns.append(Turn(turn_id, person, s, sequence, role, text, at))
                if tag:
                    tagged[tag] = turn_id

        questions: list[tuple[str, str, tuple[str, ...]]] = []

        def ask(template: str, person: str = person, **kw: str) -> str:
            text = template.format(p=person, **kw)
            padding = rng.choice(PADDING)
            return padding + (text[0].lower() + text[1:] if padding else text)

        for topic in topics:
            spec = TOPICS[topic]
            if f"change:{topic}" in tagged:
                questions.append(
                    ("changed", ask(rng.choice(spec["ask"])), (tagged[f"change:{topic}"],))
                )
            else:
                questions.append(
                    ("single", ask(rng.choice(spec["ask"])), (tagged[f"say:{topic}"],))
                )
        for relation, (_, question, _) in zip(relations, events, strict=False):
            evidence = (tagged[f"intro:{relation}"], tagged[f"event:{relation}"])
            questions.append(("multi", ask(question, r=relation), evidence))
        # temporal: the plan of the first session 5-12 days after the move's session
        move_session = int(tagged["say:move"].split("-s")[1].split("-")[0])
        after = [s for s in planned if 5 <= (dates[s] - dates[move_session]).days <= 12]
        if after:
            questions.append(
                ("temporal", ask(rng.choice(PLAN_ASK_AFTER)), (tagged[f"plan:{after[0]}"],))
            )
        for s in rng.sample(sorted(planned), 4):
            day = dates[s] + timedelta(days=rng.randint(0, 2))
            label = f"{day.day} {day.strftime('%B %Y')}"
            questions.append(
                ("temporal", ask(rng.choice(PLAN_ASK_DATE), d=label), (tagged[f"plan:{s}"],))
            )
        # no answer: topics never brought up, the relation never named, a week with no session
        questions.extend(
            ("none", ask(rng.choice(TOPICS[topic]["ask"])), ()) for topic in rng.sample(absent, 4)
        )
        _, never_question, _ = rng.choice(
            [e for e in RELATIVE_EVENTS if e not in events] or RELATIVE_EVENTS
        )
        questions.append(("none", ask(never_question, r=relations[3]), ()))
        gap = dates[-1] + timedelta(days=rng.randint(40, 90))
        label = f"{gap.day} {gap.strftime('%B %Y')}"
        questions.append(("none", ask(rng.choice(PLAN_ASK_DATE), d=label), ()))

        for i, (kind, text, evidence) in enumerate(questions):
            out.questions.append(Question(f"{person}-q{i}", person, text, kind, evidence, split))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="write bench/data/convset.json")
    args = parser.parse_args()
    dev = generate(args.seed)
    kinds: dict[str, dict[str, int]] = {}
    for q in dev.questions:
        kinds.setdefault(q.split, {}).setdefault(q.kind, 0)
        kinds[q.split][q.kind] += 1
    sessions = {
        len({t.session for t in dev.turns if t.person == c.person}) for c in dev.conversations
    }
    print(
        f"{len(dev.conversations)} conversations ({min(sessions)}+ sessions), {len(dev.turns)}"
        f" turns, {len(dev.questions)} questions: {kinds}"
    )
    if args.write:
        path = Path(__file__).resolve().parent / "data" / "convset.json"
        path.write_text(json.dumps(asdict(dev), indent=None) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
