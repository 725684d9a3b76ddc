"""Saying "nothing relevant" in recall (`abstain`, `min_relevance` in `POST /v1/recall`): a
message under its leg's floor is dropped and one above it kept; bad values are validation
errors in the error shape."""

from __future__ import annotations

import pytest

from tests.recall.conftest import BOT, conversation_create, recall, texts

pytestmark = pytest.mark.django_db

QUERY = "espresso coffee grinder"
CLOSE = "my espresso coffee grinder broke"
FAR = "espresso tasting was fun"


@pytest.fixture
def said(world, hashing_embedder):
    conversation_create(world, "c1", ("user", CLOSE), ("user", FAR), ("user", "hello there"))


def scores(api, world, mode):
    response = recall(api, world.app.headers, selections=BOT, mode=mode, query=QUERY)
    assert response.status_code == 200
    return {h["message"]["text"]: h["score"] for h in response.json()["hits"]}


@pytest.mark.parametrize("mode", ["keyword", "semantic"])
def test_min_relevance_drops_the_message_under_it(api, world, said, mode):
    found = scores(api, world, mode)
    floor = (found[CLOSE] + found[FAR]) / 2
    response = recall(
        api, world.app.headers, selections=BOT, mode=mode, query=QUERY, min_relevance=floor
    )
    assert texts(response) == [CLOSE]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_abstain_applies_the_calibrated_floors(api, world, said, settings, mode):
    keyword, semantic = scores(api, world, "keyword"), scores(api, world, "semantic")
    kw_floor = (keyword[CLOSE] + keyword[FAR]) / 2
    sem_floor = (semantic[CLOSE] + semantic[FAR]) / 2
    settings.RELEVANCE_THRESHOLDS = {
        **settings.RELEVANCE_THRESHOLDS,
        "recall.keyword": kw_floor,
        "recall.semantic": sem_floor,
        "recall.hybrid.keyword": kw_floor,
        "recall.hybrid.semantic": sem_floor,
    }
    plain = recall(api, world.app.headers, selections=BOT, mode=mode, query=QUERY)
    abstaining = recall(
        api, world.app.headers, selections=BOT, mode=mode, query=QUERY, abstain=True
    )
    assert {CLOSE, FAR} <= set(texts(plain))
    assert texts(abstaining) == [CLOSE]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mode": "hybrid", "min_relevance": 0.3}, "min_relevance"),
        ({"mode": "semantic", "min_relevance": "high"}, "min_relevance"),
        ({"mode": "keyword", "abstain": "true"}, "abstain"),
    ],
)
def test_bad_abstain_or_min_relevance_is_a_validation_error(api, world, said, body, field):
    response = recall(api, world.app.headers, selections=BOT, query=QUERY, **body)
    assert response.status_code == 400
    assert set(response.json()) == {"code", "message", "details"}
    assert response.json()["code"] == "validation-error"
    assert field in response.json()["details"]
