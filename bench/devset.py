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
# Each template: slots (each value a dict: "t" the words used in the turn and the fact, "p" a
# paraphrase for paraphrased questions), what the person says (first person, {my} is "my"),
# the fact (third person, {my} is "her"/"his"), the agent's echo, direct and paraphrased
# questions, and an "all of this kind" question. `key` is the slot that identifies the event
# among the same person's events of this template (no two share it).


def v(t: str, p: str | None = None) -> dict[str, str]:
    return {"t": t, "p": p or t}


WHEN = [
    v("last weekend", "the previous weekend"),
    v("in May", "during May"),
    v("over the holidays", "during the holiday break"),
    v("on Sunday morning", "early on Sunday"),
    v("last summer", "the summer before"),
    v("yesterday", "the day before"),
    v("two weeks ago", "a fortnight back"),
    v("in early March", "at the start of March"),
    v("after work on Friday", "on Friday evening"),
    v("on {my} birthday", "on the day {my} birthday fell"),
]

TEMPLATES: list[dict] = [
    {
        "kind": "paint",
        "key": "obj",
        "slots": {
            "obj": [
                v("a sunrise over the lake", "the dawn above the water"),
                v("a portrait of {my} grandmother", "a picture of {my} granny"),
                v("the garden fence", "the wooden barrier around the yard"),
                v("a mural at the library", "a wall artwork for the book lending place"),
                v("a bowl of lemons", "some citrus fruit in a dish"),
                v("{my} old canoe", "{my} aging little boat"),
                v("a horse running on the beach", "a stallion galloping by the sea"),
                v("the night sky over the city", "the stars above downtown"),
            ],
            "when": WHEN,
        },
        "say": [
            "I painted {obj} {when}, I'm pretty proud of how it turned out.",
            "Finally finished painting {obj} {when}!",
            "So {when} I sat down and painted {obj}. Took hours.",
        ],
        "fact": "painted {obj} {when}.",
        "echo": [
            "Painting {obj} sounds lovely! What colours did you use?",
            "Wow, {obj}! Share a photo?",
        ],
        "ask": ["When did {name} paint {obj}?", "What did {name} paint {when}?"],
        "para": [
            "When did {name} make a picture of {obj.p}?",
            "What artwork did {name} create {when.p}?",
        ],
        "all": "What has {name} painted?",
    },
    {
        "kind": "pet",
        "key": "pet",
        "slots": {
            "pet": [
                v("a puppy", "a young dog"),
                v("a kitten", "a baby cat"),
                v("a rescue greyhound", "a retired racing hound"),
                v("two guinea pigs", "a pair of small furry rodents"),
                v("a parrot", "a talking bird"),
                v("a tortoise", "a slow shelled reptile"),
            ],
            "petname": [
                v("Biscuit"),
                v("Pepper"),
                v("Luna"),
                v("Milo"),
                v("Ziggy"),
                v("Mochi"),
                v("Rufus"),
                v("Clementine"),
                v("Waffles"),
            ],
        },
        "say": [
            "We adopted {pet} from the shelter and named it {petname}.",
            "Meet {petname}! We brought home {pet} this week.",
        ],
        "fact": "adopted {pet} named {petname}.",
        "echo": [
            "{petname} is such a cute name! How is {pet} settling in?",
            "Aww, {pet}! Congratulations.",
        ],
        "ask": ["What is the name of {name}'s {pet.noun}?", "What kind of pet is {petname}?"],
        "para": [
            "What did {name} call {their} new {pet.p}?",
            "Which animal did {name} take home from the rescue centre?",
        ],
        "all": "What pets does {name} have?",
    },
    {
        "kind": "trip",
        "key": "reason",
        "slots": {
            "city": [
                v("Lisbon"),
                v("Kyoto"),
                v("Denver"),
                v("Oslo"),
                v("Nairobi"),
                v("Montreal"),
                v("Hanoi"),
                v("Seville"),
                v("Auckland"),
                v("Prague"),
                v("Valparaiso"),
            ],
            "reason": [
                v("my cousin's wedding", "a relative's marriage ceremony"),
                v("a work conference", "a business convention"),
                v("a marathon", "a long distance running race"),
                v("a cooking course", "culinary lessons"),
                v("my sister's graduation", "a sibling's commencement"),
                v("a music festival", "an outdoor concert weekend"),
                v("a job interview", "meeting a potential employer"),
            ],
        },
        "say": [
            "We flew to {city} for {reason}, what a trip.",
            "Just got back from {city}! Went there for {reason}.",
        ],
        "fact": "travelled to {city} for {reason}.",
        "echo": ["{city} must have been amazing. How was {reason}?", "Welcome back from {city}!"],
        "ask": ["Where did {name} travel for {reason}?", "Why did {name} go to {city}?"],
        "para": [
            "Which city did {name} visit for {reason.p}?",
            "What was the purpose of {name}'s journey abroad to {city}?",
        ],
        "all": "Which places has {name} travelled to?",
    },
    {
        "kind": "job",
        "key": "role",
        "slots": {
            "role": [
                v("a nurse", "a hospital caregiver"),
                v("a data analyst", "someone who crunches numbers"),
                v("a baker", "a bread maker"),
                v("a bus driver", "a public transit operator"),
                v("a teacher", "an educator"),
                v("a graphic designer", "a visual artist for brands"),
                v("a park ranger", "a forest warden"),
            ],
            "company": [
                v("Kestrel Labs"),
                v("Brightwater Clinic"),
                v("Oakline Transit"),
                v("Maple and Rye Bakery"),
                v("Northfield High"),
                v("Pixelforge Studio"),
                v("Cedar Valley Park"),
                v("Harbor Point Hospital"),
            ],
        },
        "say": [
            "Big news: I started a new job as {role} at {company}.",
            "First week as {role} at {company} is done, exhausting but good.",
        ],
        "fact": "works as {role} at {company}.",
        "echo": ["Congratulations on the job at {company}!", "How do you like being {role}?"],
        "ask": ["Where does {name} work as {role}?", "What job does {name} have at {company}?"],
        "para": ["Which employer hired {name} as {role.p}?", "What is {name}'s occupation now?"],
        "all": "What jobs has {name} had?",
    },
    {
        "kind": "book",
        "key": "book",
        "slots": {
            "book": [
                v("The Salt Road"),
                v("A Winter in Tangier"),
                v("Quiet Engines"),
                v("The Glass Orchard"),
                v("Borrowed Light"),
                v("Ninety Rivers"),
                v("The Last Lighthouse Keeper"),
            ],
            "opinion": [
                v("absolutely gripping", "impossible to put down"),
                v("a bit slow", "rather dull in places"),
                v("heartbreaking", "deeply sad"),
                v("funny and warm", "humorous and kind"),
            ],
        },
        "say": [
            "I just finished reading {book}, honestly it was {opinion}.",
            "Finished {book} last night. {opinion.cap}.",
        ],
        "fact": "read {book} and found it {opinion}.",
        "echo": ["I've heard good things about {book}.", "{book}? What was your favourite part?"],
        "ask": ["What did {name} think of {book}?", "Which book did {name} find {opinion}?"],
        "para": [
            "How did {name} feel about the novel {book}?",
            "Which story did {name} think was {opinion.p}?",
        ],
        "all": "What books has {name} read?",
    },
    {
        "kind": "music",
        "key": "instrument",
        "slots": {
            "instrument": [
                v("guitar", "six-string"),
                v("piano", "keyboard"),
                v("violin", "fiddle"),
                v("drums", "percussion kit"),
                v("cello", "large bowed string instrument"),
                v("saxophone", "sax"),
            ],
            "day": [v("Tuesday"), v("Wednesday"), v("Thursday"), v("Saturday"), v("Monday")],
        },
        "say": [
            "I've been taking {instrument} lessons every {day} evening.",
            "My {instrument} teacher moved our lessons to {day}s.",
        ],
        "fact": "takes {instrument} lessons every {day}.",
        "echo": [
            "Learning {instrument} is so rewarding!",
            "How are the {instrument} lessons going?",
        ],
        "ask": [
            "When does {name} have {instrument} lessons?",
            "Which instrument does {name} practise on {day}?",
        ],
        "para": [
            "On which day does {name} learn to play the {instrument.p}?",
            "What music class does {name} attend weekly?",
        ],
        "all": "Which instruments does {name} play?",
    },
    {
        "kind": "bake",
        "key": "occasion",
        "slots": {
            "dish": [
                v("a lemon drizzle cake", "a citrus sponge"),
                v("sourdough bread", "a tangy loaf"),
                v("chocolate chip cookies", "sweet biscuits with cocoa bits"),
                v("an apple pie", "a fruit tart"),
                v("cinnamon rolls", "spiced buns"),
                v("a carrot cake", "a vegetable sponge cake"),
            ],
            "occasion": [
                v("the school fundraiser", "a charity event at the school"),
                v("my dad's retirement party", "{my} father's farewell from work"),
                v("the neighbours' housewarming", "the people next door moving in"),
                v("our anniversary", "{my} wedding anniversary"),
                v("the office potluck", "a shared lunch with colleagues"),
            ],
        },
        "say": [
            "I baked {dish} for {occasion} and it disappeared in minutes.",
            "Made {dish} for {occasion}, first time trying that recipe.",
        ],
        "fact": "baked {dish} for {occasion}.",
        "echo": [
            "Yum, {dish}! Did everyone at {occasion} love it?",
            "Baking {dish} takes patience.",
        ],
        "ask": [
            "What did {name} bake for {occasion}?",
            "For what occasion did {name} bake {dish}?",
        ],
        "para": [
            "Which dessert did {name} make for {occasion.p}?",
            "Why did {name} prepare {dish.p}?",
        ],
        "all": "What has {name} baked?",
    },
    {
        "kind": "injury",
        "key": "bodypart",
        "slots": {
            "bodypart": [
                v("ankle", "foot joint"),
                v("wrist", "hand joint"),
                v("knee", "leg joint"),
                v("shoulder", "upper arm"),
                v("back", "spine"),
            ],
            "activity": [
                v("playing volleyball", "a beach ball game"),
                v("moving furniture", "carrying a sofa"),
                v("skiing", "a day on the slopes"),
                v("rock climbing", "scaling a wall at the gym"),
                v("chasing the bus", "running after public transport"),
            ],
        },
        "say": [
            "Ugh, I hurt my {bodypart} {activity}, so I'm resting this week.",
            "Doctor says I sprained my {bodypart}. Happened while {activity}.",
        ],
        "fact": "hurt {my} {bodypart} while {activity}.",
        "echo": ["Oh no, your {bodypart}! Take it easy.", "Hope the {bodypart} heals quickly."],
        "ask": [
            "How did {name} injure {their} {bodypart}?",
            "What did {name} hurt while {activity}?",
        ],
        "para": [
            "What happened to {name}'s {bodypart.p}?",
            "How did {name} get injured during {activity.p}?",
        ],
        "all": "What injuries has {name} had?",
    },
    {
        "kind": "garden",
        "key": "plants",
        "slots": {
            "plants": [
                v("tomatoes", "red salad fruit"),
                v("sunflowers", "tall yellow blooms"),
                v("lavender", "purple fragrant herbs"),
                v("tulip bulbs", "spring flowers"),
                v("a lemon tree", "a citrus sapling"),
                v("strawberries", "red berries"),
            ],
            "place": [
                v("backyard", "garden behind the house"),
                v("balcony", "terrace outside the flat"),
                v("community garden", "shared allotment"),
                v("front yard", "lawn by the street"),
            ],
        },
        "say": [
            "I planted {plants} in the {place} {when}.",
            "The {plants} I put in the {place} are finally growing!",
        ],
        "fact": "planted {plants} in the {place}.",
        "echo": ["{plants.cap} in the {place}, how nice.", "Gardening is so calming."],
        "ask": ["What did {name} plant in the {place}?", "Where did {name} plant {plants}?"],
        "para": [
            "What is {name} growing in the {place.p}?",
            "Where are {name}'s {plants.p} growing?",
        ],
        "all": "What has {name} planted?",
    },
    {
        "kind": "move",
        "key": "district",
        "slots": {
            "district": [
                v("Riverside"),
                v("the Old Town"),
                v("Elm Park"),
                v("Harbourview"),
                v("Westbrook"),
                v("Hillcrest"),
            ],
            "home": [
                v("a small apartment", "a compact flat"),
                v("a townhouse", "a terraced house"),
                v("a loft", "an open-plan studio"),
            ],
        },
        "say": [
            "We moved into {home} in {district}, boxes everywhere.",
            "New address! {home.cap} in {district}.",
        ],
        "fact": "moved into {home} in {district}.",
        "echo": ["How do you like {district}?", "Moving is exhausting, congrats on {home}!"],
        "ask": ["Where did {name} move to?", "What kind of home did {name} get in {district}?"],
        "para": [
            "Which neighbourhood is {name}'s new place in?",
            "What sort of {home.p} did {name} find?",
        ],
        "all": "Where has {name} lived?",
    },
    {
        "kind": "language",
        "key": "language",
        "slots": {
            "language": [
                v("Portuguese"),
                v("Japanese"),
                v("Swahili"),
                v("Korean"),
                v("Italian"),
                v("Arabic"),
            ],
            "app": [v("Lingora"), v("Parlo"), v("Wordnest"), v("Fluentfox"), v("Babelbee")],
        },
        "say": [
            "I'm learning {language} with an app called {app}, ten minutes a day.",
            "Day 40 of {language} on {app}!",
        ],
        "fact": "is learning {language} with the {app} app.",
        "echo": ["{language} is a beautiful language.", "How is {app} working for you?"],
        "ask": [
            "Which language is {name} learning?",
            "What app does {name} use to learn {language}?",
        ],
        "para": [
            "What foreign tongue is {name} studying?",
            "Which tool helps {name} study {language}?",
        ],
        "all": "What languages is {name} learning?",
    },
    {
        "kind": "concert",
        "key": "band",
        "slots": {
            "band": [
                v("The Paper Kites"),
                v("Midnight Static"),
                v("Velvet Harbor"),
                v("Sons of Juniper"),
                v("Nova Tide"),
                v("The Lantern Club"),
            ],
            "venue": [
                v("the Roundhouse"),
                v("Riverside Arena"),
                v("the Blue Note cafe"),
                v("the city park amphitheatre"),
                v("Union Hall"),
            ],
        },
        "say": [
            "We saw {band} play live at {venue}, best night in ages.",
            "{band} at {venue} last night, my ears are still ringing!",
        ],
        "fact": "saw {band} live at {venue}.",
        "echo": ["{band} live must have been incredible!", "How was {venue}?"],
        "ask": ["Which band did {name} see at {venue}?", "Where did {name} see {band} play?"],
        "para": [
            "What group performed for {name} at {venue}?",
            "At which venue did {name} watch {band} perform?",
        ],
        "all": "Which concerts has {name} been to?",
    },
    {
        "kind": "gift",
        "key": "relative",
        "slots": {
            "relative": [
                v("brother", "sibling"),
                v("aunt", "father's sister"),
                v("best friend", "closest pal"),
                v("grandfather", "grandpa"),
                v("partner", "significant other"),
            ],
            "gift": [
                v("a vintage camera", "an old film camera"),
                v("a pair of hiking boots", "mountain footwear"),
                v("a telescope", "a stargazing scope"),
                v("a cookbook", "a recipe collection"),
                v("concert tickets", "passes to a show"),
                v("a handmade scarf", "a knitted neck warmer"),
            ],
        },
        "say": [
            "My {relative} gave me {gift} for my birthday, I love it.",
            "Look what my {relative} got me: {gift}!",
        ],
        "fact": "got {gift} from {my} {relative} as a birthday present.",
        "echo": ["What a thoughtful gift, {gift}!", "Your {relative} knows you well."],
        "ask": [
            "What did {name}'s {relative} give {them} for {their} birthday?",
            "Who gave {name} {gift}?",
        ],
        "para": [
            "What present did {name} receive from {their} {relative.p}?",
            "Which relative gave {name} {gift.p}?",
        ],
        "all": "What birthday presents did {name} get?",
    },
    {
        "kind": "allergy",
        "key": "allergen",
        "slots": {
            "allergen": [
                v("peanuts", "groundnuts"),
                v("shellfish", "prawns and crab"),
                v("cats", "felines"),
                v("pollen", "flower dust"),
                v("penicillin", "a common antibiotic"),
            ],
            "symptom": [
                v("hives", "itchy skin welts"),
                v("a swollen face", "facial swelling"),
                v("sneezing fits", "nonstop sneezes"),
            ],
        },
        "say": [
            "Turns out I'm allergic to {allergen}, I got {symptom}.",
            "Allergy test came back: {allergen}. Explains the {symptom}.",
        ],
        "fact": "is allergic to {allergen} (reaction: {symptom}).",
        "echo": [
            "Allergic to {allergen}? That must be hard.",
            "Good that you found the cause of the {symptom}.",
        ],
        "ask": ["What is {name} allergic to?", "What reaction does {name} get from {allergen}?"],
        "para": [
            "Which substance should {name} avoid for health reasons?",
            "What happens when {name} is exposed to {allergen.p}?",
        ],
        "all": "What allergies does {name} have?",
    },
    {
        "kind": "car",
        "key": "car",
        "slots": {
            "car": [
                v("hatchback", "small car with a rear door"),
                v("pickup truck", "utility vehicle with a cargo bed"),
                v("electric scooter", "battery-powered two-wheeler"),
                v("camper van", "motorhome"),
                v("station wagon", "estate car"),
            ],
            "colour": [v("red"), v("dark green"), v("silver"), v("bright yellow"), v("navy blue")],
        },
        "say": [
            "I bought a used {car}, {colour}, and it runs great.",
            "Picked up my new {colour} {car} today!",
        ],
        "fact": "bought a {colour} {car}.",
        "echo": ["A {colour} {car}, nice choice!", "Congrats on the {car}!"],
        "ask": ["What colour is {name}'s {car}?", "What vehicle did {name} buy in {colour}?"],
        "para": ["What did {name} purchase to get around?", "Which {car.p} did {name} get?"],
        "all": "What vehicles has {name} bought?",
    },
    {
        "kind": "class",
        "key": "course",
        "slots": {
            "course": [
                v("pottery", "ceramics"),
                v("salsa dancing", "latin dance"),
                v("first aid", "emergency care"),
                v("photography", "taking pictures"),
                v("woodworking", "carpentry"),
                v("yoga", "stretching and breathing"),
            ],
            "where": [
                v("the community centre", "the local hall"),
                v("the university", "the college"),
                v("a studio downtown", "a workshop in the centre"),
            ],
        },
        "say": [
            "I signed up for a {course} class at {where}.",
            "First {course} class at {where} tonight, a bit nervous.",
        ],
        "fact": "signed up for a {course} class at {where}.",
        "echo": ["{course.cap} sounds fun!", "Enjoy the class at {where}."],
        "ask": [
            "What class did {name} sign up for at {where}?",
            "Where does {name} take {course} classes?",
        ],
        "para": ["Which course did {name} enrol in?", "Where is {name} learning {course.p}?"],
        "all": "Which classes has {name} taken?",
    },
    {
        "kind": "hike",
        "key": "mountain",
        "slots": {
            "mountain": [
                v("Mount Ashby"),
                v("Eagle Peak"),
                v("the Granite Ridge"),
                v("Bear Hill"),
                v("Crow's Nest summit"),
            ],
            "lake": [
                v("Silver Lake"),
                v("Lake Merrow"),
                v("Fern Pond"),
                v("Otter Lake"),
                v("Clearwater Reservoir"),
            ],
        },
        "say": [
            "We hiked up {mountain} and camped by {lake}.",
            "Camping at {lake} after the climb up {mountain} was magical.",
        ],
        "fact": "hiked {mountain} and camped by {lake}.",
        "echo": ["{mountain} is a tough climb!", "Camping by {lake} sounds peaceful."],
        "ask": [
            "Where did {name} camp after hiking {mountain}?",
            "Which mountain did {name} climb before camping at {lake}?",
        ],
        "para": [
            "Which lake did {name} sleep beside on the trek?",
            "What summit did {name} reach on the camping trip?",
        ],
        "all": "Where has {name} hiked?",
    },
    {
        "kind": "wedding",
        "key": "friend",
        "slots": {
            "friend": [v("Jasmine"), v("Rob"), v("Keiko"), v("Marcus"), v("Elena"), v("Samir")],
            "month": [v("June"), v("September"), v("October"), v("April"), v("December")],
        },
        "say": [
            "My friend {friend} is getting married in {month}, I'm a bridesmaid!",
            "{friend}'s wedding is set for {month}. So much planning.",
        ],
        "fact": "'s friend {friend} is getting married in {month}.",
        "echo": ["A {month} wedding, lovely!", "Congratulations to {friend}!"],
        "ask": [
            "When is {name}'s friend {friend} getting married?",
            "Whose wedding is {name} going to in {month}?",
        ],
        "para": [
            "In which month does {friend} tie the knot?",
            "Which of {name}'s friends has a ceremony in {month}?",
        ],
        "all": "Whose weddings is {name} attending?",
    },
]

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
