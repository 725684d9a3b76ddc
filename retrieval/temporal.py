"""The temporal arm (issue 45): a question that names a calendar date ("the week of 12 March
2024", "on March 3rd, 2024", "in March 2024") asks about what was said around then, which
neither words nor meaning find: every weekend plan is alike, only its date tells them apart.
The arm reads the date (python-dateutil's parser, on the date phrase only: fuzzy parsing of a
whole question finds dates in any number) and gives the window a search then ranks within.

A day names the days around it (`DAY_SLACK` either side: "the week of" a day, or a day a
person misremembers by a few); a month alone names the month. Relative dates ("last week",
"two days after the move") need a date parser that reads them (dateparser) and an anchor event;
they are not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateutil import parser as date_parser

DAY_SLACK = timedelta(days=4)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"
# a day and a month (either order), with or without a year; or a month and a year
_DAY_PHRASE = re.compile(
    rf"\b(?:{_DAY}\s+(?:of\s+)?{_MONTH}\.?(?:,?\s+{_YEAR})?|{_MONTH}\.?\s+{_DAY}(?:,?\s+{_YEAR})?)\b",
    re.IGNORECASE,
)
_MONTH_PHRASE = re.compile(rf"\b{_MONTH}\.?,?\s+{_YEAR}\b", re.IGNORECASE)
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive
    end: datetime  # exclusive


def window(text: str, today: datetime | None = None) -> Window | None:
    """The time `text` asks about, or None when it names no calendar date. A date without a
    year is in `today`'s year (now by default)."""
    today = today or datetime.now(UTC)
    default = datetime(today.year, 1, 1, tzinfo=UTC)
    phrase = _ISO.search(text) or _DAY_PHRASE.search(text)
    if phrase is not None:
        day = _parsed(phrase.group(0), default)
        if day is None:
            return None
        return Window(day - DAY_SLACK, day + timedelta(days=1) + DAY_SLACK)
    phrase = _MONTH_PHRASE.search(text)
    if phrase is None:
        return None
    first = _parsed(phrase.group(0), default)
    if first is None:
        return None
    first = first.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Window(first, following)


def _parsed(phrase: str, default: datetime) -> datetime | None:
    try:
        value = date_parser.parse(phrase, default=default)
    except (ValueError, OverflowError):  # "31 February"
        return None
    return value.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
