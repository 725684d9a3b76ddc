"""The words of the development set (bench/devset.py): people, the kinds of event they tell of
(in the first person, as facts and as questions), and the talk around them."""

from __future__ import annotations

import json
from pathlib import Path

# --- people ------------------------------------------------------------------------------------

PEOPLE = [
    ("Melanie", "she"),
    ("Caroline", "she"),
    ("Tomas", "he"),
    ("Priya", "she"),
    ("Kwame", "he"),
    ("Ingrid", "she"),
    ("Hiroshi", "he"),
    ("Lucia", "she"),
    ("Omar", "he"),
    ("Nadia", "she"),
    ("Felix", "he"),
    ("Aisha", "she"),
    ("Dmitri", "he"),
    ("Zoe", "she"),
    ("Mateo", "he"),
    ("Hannah", "she"),
]

PRONOUNS = {"she": ("she", "her", "her"), "he": ("he", "him", "his")}

# --- events ------------------------------------------------------------------------------------
# Each kind of event: its first-person turns, its fact, its questions and the slot values that
# make one event of the kind (bench/data/devset_events.json, written for this set).

_EVENTS = json.loads(
    (Path(__file__).parent / "data" / "devset_events.json").read_text(encoding="utf-8")
)
WHEN: list[dict[str, str]] = _EVENTS["when"]  # slot values for "when" an event happened
TEMPLATES: list[dict] = _EVENTS["templates"]

NOUNS = {  # a slot value's bare noun, for questions like "What is the name of X's puppy?"
    "a puppy": "puppy",
    "a kitten": "kitten",
    "a rescue greyhound": "greyhound",
    "two guinea pigs": "guinea pigs",
    "a parrot": "parrot",
    "a tortoise": "tortoise",
}

# --- what surrounds the evidence ---------------------------------------------------------------

SMALL_TALK = [
    "Haha yes, the weather has been crazy lately.",
    "I'm so tired today, work was busy.",
    "Not much new, just the usual routine.",
    "Thanks for asking, I'm doing okay.",
    "Can you believe it's already the end of the month?",
    "I had the best coffee this morning.",
    "My phone died twice today, so annoying.",
    "Sorry for the late reply, it's been hectic.",
    "I watched a documentary about octopuses, fascinating stuff.",
    "Traffic was terrible on the way home.",
    "I need a holiday, honestly.",
    "We had pizza for dinner again.",
    "Did you see the game last night?",
    "I'm trying to drink more water this week.",
    "My neighbour's dog barked all night.",
    "It rained the whole weekend.",
    "I finally cleaned out the garage.",
    "My sister called, she says hi.",
]
# Passing mentions: the event's words in another context, so a word alone proves nothing.
MENTION = [
    "I keep thinking about {word} for some reason.",
    "Funny, someone at work mentioned {word} today.",
    "Not a fan of {word} honestly.",
    "Remember when we talked about {word}? Never mind.",
    "My cousin is obsessed with {word}.",
    "There was a show about {word} on TV last night.",
]
AGENT_SMALL = [
    "That's good to hear.",
    "How are you feeling about it?",
    "Tell me more!",
    "I'm glad you shared that.",
    "That sounds like a lot, take care of yourself.",
    "Haha, I understand.",
]
PADDING = [
    "Do you remember {q}",
    "Can you remind me: {q}",
    "{q} I forgot.",
    "Quick question, {q}",
    "{q} Any idea?",
    "I was wondering, {q}",
]
OTHERS = ["My neighbour", "My coworker", "My cousin", "A friend of mine", "My boss", "My sister"]
ALL_QUESTIONS = 3  # "all of a kind" questions per person
NOTES = [  # facts that are not events: preferences and notes, some sharing the events' words
    "prefers to be contacted by email in the evening.",
    "likes {word}.",
    "mentioned {word} in passing.",
    "does not enjoy {word}.",
    "asked about {word} once.",
    "wants to try {word} someday.",
]
