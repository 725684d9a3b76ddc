"""The search benchmark's corpus: realistic short facts about people, preferences and projects,
with Zipf-distributed tenants, projects and participants, generated from a seed; and queries
with a known relevant fact. Deterministic: the same seed and size give the same corpus, so its
vectors can be cached (bench/search.py keeps them under var/bench/search/)."""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass

FIRST = [
    "Maria",
    "Ana",
    "Joao",
    "Pedro",
    "Sofia",
    "Lucas",
    "Emma",
    "Noah",
    "Olivia",
    "Liam",
    "Mia",
    "Elias",
    "Lea",
    "Felix",
    "Clara",
    "Jonas",
    "Amira",
    "Omar",
    "Yuki",
    "Kenji",
    "Priya",
    "Arjun",
    "Chen",
    "Wei",
    "Fatima",
    "Ali",
    "Ingrid",
    "Lars",
    "Chiara",
    "Marco",
    "Zoe",
    "Hugo",
    "Nina",
    "Tomas",
    "Eva",
    "Ivan",
    "Olga",
    "Dmitri",
    "Aisha",
    "Kwame",
    "Lucia",
    "Mateo",
    "Sara",
    "David",
    "Hannah",
    "Ben",
    "Laura",
    "Paul",
]
LAST = [
    "Silva",
    "Santos",
    "Costa",
    "Muller",
    "Schmidt",
    "Rossi",
    "Bianchi",
    "Garcia",
    "Lopez",
    "Martin",
    "Bernard",
    "Dubois",
    "Smith",
    "Jones",
    "Brown",
    "Tanaka",
    "Sato",
    "Kumar",
    "Patel",
    "Wang",
    "Li",
    "Zhang",
    "Khan",
    "Ahmed",
    "Hansen",
    "Berg",
    "Novak",
    "Horvat",
    "Kowalski",
]
DRINKS = [
    "coffee",
    "espresso",
    "green tea",
    "black tea",
    "oat milk latte",
    "sparkling water",
    "hot chocolate",
    "matcha",
    "orange juice",
    "decaf",
]
TIMES = ["morning", "afternoon", "evening", "late night", "weekend"]
FOODS = [
    "sushi",
    "pizza",
    "vegan curry",
    "steak",
    "pasta carbonara",
    "falafel",
    "ramen",
    "tacos",
    "salads",
    "dark chocolate",
]
ALLERGENS = [
    "peanuts",
    "shellfish",
    "gluten",
    "lactose",
    "pollen",
    "cats",
    "penicillin",
    "eggs",
    "soy",
    "bee stings",
]
CITIES = [
    "Lisbon",
    "Porto",
    "Berlin",
    "Munich",
    "Paris",
    "Lyon",
    "Madrid",
    "Rome",
    "Milan",
    "Tokyo",
    "Osaka",
    "London",
    "Dublin",
    "Oslo",
    "Prague",
    "Vienna",
    "Warsaw",
    "Toronto",
    "Boston",
    "Austin",
]
LANGUAGES = [
    "Portuguese",
    "German",
    "French",
    "Spanish",
    "Italian",
    "Japanese",
    "English",
    "Norwegian",
    "Czech",
    "Polish",
]
CHANNELS = ["email", "phone", "text message", "video call", "the app chat"]
PROJECTS = [
    "billing migration",
    "mobile app redesign",
    "data warehouse",
    "onboarding flow",
    "search relevance",
    "payments API",
    "customer portal",
    "analytics dashboard",
    "support chatbot",
    "security audit",
]
ROLES = [
    "tech lead",
    "designer",
    "product manager",
    "backend engineer",
    "data analyst",
    "QA engineer",
    "sponsor",
    "reviewer",
]
HOBBIES = [
    "hiking",
    "chess",
    "sailing",
    "photography",
    "running marathons",
    "painting",
    "gardening",
    "rock climbing",
    "playing guitar",
    "baking bread",
]
SEATS = ["window seat", "aisle seat", "quiet carriage", "front row"]
COLORS = ["red", "blue", "black", "white", "green", "silver"]
VEHICLES = ["bicycle", "car", "scooter", "motorbike", "van"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# (fact text, keyword-style query, question-style query, type)
TEMPLATES = [
    (
        "{name} prefers {drink} in the {time}",
        "{name} {drink}",
        "what does {name} like to drink in the {time}?",
        "preference",
    ),
    (
        "{name} is allergic to {allergen}",
        "{name} allergic {allergen}",
        "does {name} have any allergies?",
        "profile",
    ),
    (
        "{name} lives in {city} and speaks {language}",
        "{name} {city}",
        "where does {name} live?",
        "profile",
    ),
    (
        "{name} works on the {project} project as {role}",
        "{project} {role}",
        "who is the {role} on the {project}?",
        "project",
    ),
    (
        "{name} loves {food} but avoids {food2}",
        "{name} {food}",
        "what food does {name} enjoy?",
        "preference",
    ),
    (
        "{name} asked to be contacted by {channel} after {hour} o'clock",
        "{name} contacted {channel}",
        "how should we contact {name}?",
        "preference",
    ),
    ("{name} spends free time {hobby}", "{name} {hobby}", "what are {name}'s hobbies?", "profile"),
    (
        "{name} always books a {seat} when travelling",
        "{name} {seat}",
        "which seat does {name} book on trips?",
        "preference",
    ),
    (
        "{name} owns a {color} {vehicle}",
        "{name} {color} {vehicle}",
        "what vehicle does {name} have?",
        "profile",
    ),
    (
        "{name} is planning a trip to {city} in {month}",
        "{name} trip {city}",
        "when is {name} travelling to {city}?",
        "note",
    ),
    (
        "The {project} deadline moved to {month}, says {name}",
        "{project} deadline",
        "when is the {project} due?",
        "project",
    ),
    (
        "{name} reported a billing problem with invoice {invoice}",
        "invoice {invoice}",
        "which invoice did {name} complain about?",
        "note",
    ),
]


@dataclass(frozen=True)
class Row:
    tenant: int
    project: int  # index within the tenant
    participant: int | None  # index within the project; None: a project-wide fact
    type: str
    text: str
    keyword_query: str
    question: str


class Zipf:
    """Draws 0..n-1 with weight 1 / (rank + 1) ** s."""

    def __init__(self, n: int, s: float) -> None:
        self.cumulative = list(itertools.accumulate(1.0 / (r + 1) ** s for r in range(n)))

    def draw(self, rng: random.Random) -> int:
        return bisect.bisect_left(self.cumulative, rng.random() * self.cumulative[-1])


TENANTS = 10
PROJECTS_PER_TENANT = 40
PARTICIPANTS_PER_PROJECT = 5000
PROJECT_WIDE_SHARE = 0.05


def generate(n: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    tenants = Zipf(TENANTS, 1.5)
    projects = Zipf(PROJECTS_PER_TENANT, 1.1)
    participants = Zipf(PARTICIPANTS_PER_PROJECT, 1.05)
    rows = []
    for _ in range(n):
        tenant = tenants.draw(rng)
        project = projects.draw(rng)
        participant = None if rng.random() < PROJECT_WIDE_SHARE else participants.draw(rng)
        # a participant is one person: their facts share a name
        person = random.Random(f"{tenant}:{project}:{participant}")
        name = f"{person.choice(FIRST)} {person.choice(LAST)}"
        text, keyword, question, kind = rng.choice(TEMPLATES)
        slots = {
            "name": name,
            "drink": rng.choice(DRINKS),
            "time": rng.choice(TIMES),
            "allergen": rng.choice(ALLERGENS),
            "city": rng.choice(CITIES),
            "language": rng.choice(LANGUAGES),
            "project": rng.choice(PROJECTS),
            "role": rng.choice(ROLES),
            "food": rng.choice(FOODS),
            "food2": rng.choice(FOODS),
            "channel": rng.choice(CHANNELS),
            "hour": rng.randint(8, 20),
            "hobby": rng.choice(HOBBIES),
            "seat": rng.choice(SEATS),
            "color": rng.choice(COLORS),
            "vehicle": rng.choice(VEHICLES),
            "month": rng.choice(MONTHS),
            "invoice": f"INV-{rng.randint(10000, 99999)}",
        }
        rows.append(
            Row(
                tenant=tenant,
                project=project,
                participant=participant,
                type=kind,
                text=text.format(**slots),
                keyword_query=keyword.format(**slots),
                question=question.format(**slots),
            )
        )
    return rows
