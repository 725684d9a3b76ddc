"""The temporal arm of hybrid recall (retrieval/temporal.py): a question naming a date ranks
what was said around it (a leg of its own, fused), `abstain` answers nothing for a time when
nothing readable was said, the guard still decides what is read, and the arm switches off."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recall.models import Message
from retrieval.temporal import window
from tests import factories
from tests.recall.conftest import BOT, conversation_create, recall, texts

pytestmark = pytest.mark.django_db

PLANS = {
    "My plan for the weekend: hike to the lighthouse.": datetime(2024, 3, 12, 9, tzinfo=UTC),
    "My plan for the weekend: repaint the hallway.": datetime(2024, 5, 2, 9, tzinfo=UTC),
    "My plan for the weekend: bake bread.": datetime(2024, 6, 20, 9, tzinfo=UTC),
}
QUESTION = "What was my plan for the week of 13 March 2024?"


def said(world, plans, **kwargs):
    conversation = conversation_create(
        world, kwargs.pop("thread_id", "c1"), *[("user", t) for t in plans], **kwargs
    )
    for text, at in plans.items():
        Message.objects.filter(conversation=conversation, text=text).update(created_at=at)


def hybrid(api, world, query, **body):
    body = {"top_k": 1, **body}
    return recall(api, world.app.headers, selections=BOT, mode="hybrid", query=query, **body)


def test_a_dated_question_finds_what_was_said_that_week(api, world, hashing_embedder, settings):
    said(world, PLANS)
    response = hybrid(api, world, QUESTION)
    assert texts(response) == ["My plan for the weekend: hike to the lighthouse."]
    assert response.json()["hits"][0]["ranks"]["temporal"] == 1


def test_the_arm_switches_off(api, world, hashing_embedder, settings):
    said(world, PLANS)
    settings.RETRIEVAL_ARMS = ()
    response = hybrid(api, world, QUESTION, top_k=10)
    assert all("temporal" not in h["ranks"] for h in response.json()["hits"])
    assert api.get("/v1/capabilities", **world.admin.headers).json()["arms"] == []


def test_abstain_answers_nothing_for_a_week_when_nothing_was_said(api, world, hashing_embedder):
    said(world, PLANS)
    question = "What was my plan for the week of 3 September 2024?"
    assert len(texts(hybrid(api, world, question))) == 1  # without abstain: the nearest plan
    assert texts(hybrid(api, world, question, abstain=True)) == []


def test_the_guard_decides_what_the_arm_reads(api, world, hashing_embedder):
    # given the week's only message in a project the app cannot read
    elsewhere = factories.project_create(world.tenant, world.org)
    said(world, dict(list(PLANS.items())[:1]), project=elsewhere, thread_id="hidden")
    said(world, dict(list(PLANS.items())[1:]))
    # then the arm finds nothing that week for it, and abstain says nothing
    response = hybrid(api, world, QUESTION, top_k=10)
    assert "My plan for the weekend: hike to the lighthouse." not in texts(response)
    assert texts(hybrid(api, world, QUESTION, abstain=True)) == []


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("the week of 12 March 2024?", "2024-03-08", "2024-03-17"),
        ("on March 3rd, 2024", "2024-02-28", "2024-03-08"),
        ("on 2024-03-05", "2024-03-01", "2024-03-10"),
        ("what happened in March 2024", "2024-03-01", "2024-04-01"),
    ],
)
def test_a_named_date_is_a_window(text, start, end):
    found = window(text)
    assert found is not None
    assert (found.start.date().isoformat(), found.end.date().isoformat()) == (start, end)


@pytest.mark.parametrize(
    "text", ["top 10 things to do", "May I ask something?", "the 31 February 2024", "1999 cars"]
)
def test_no_calendar_date_is_no_window(text):
    assert window(text) is None
