"""Saying "nothing relevant" (`abstain`, `min_relevance` in `POST /v1/facts/search`): a hit
under its leg's floor is dropped and one above it kept, so a question nothing answers gets no
hits; the guard still decides what is read at all; bad values are validation errors."""

from __future__ import annotations

import pytest

from tests import factories
from tests.facts.search.conftest import hit_ids, plant, search

pytestmark = pytest.mark.django_db

QUERY = "espresso coffee grinder"
CLOSE = "espresso coffee grinder settings"  # shares every word of the query
FAR = "espresso tasting"  # shares one


def scores(api, headers, mode):
    response = search(api, headers, mode=mode, query=QUERY)
    assert response.status_code == 200
    return {h["fact"]["id"]: h["score"] for h in response.json()["hits"]}


@pytest.mark.parametrize("mode", ["keyword", "semantic"])
def test_min_relevance_drops_the_hit_under_it_and_keeps_the_one_above(api, world, mode):
    # given a close and a far match of the query, and their scores without a floor
    close, far = plant(world.tenant, [CLOSE, FAR])
    found = scores(api, world.admin.headers, mode)
    high, low = found[str(close.fact_id)], found[str(far.fact_id)]
    assert high > low
    # when searching with a floor between them
    floor = (high + low) / 2
    response = search(api, world.admin.headers, mode=mode, query=QUERY, min_relevance=floor)
    # then the close match is kept and the far one dropped
    assert response.status_code == 200
    assert hit_ids(response) == [str(close.fact_id)]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_abstain_applies_the_calibrated_floors_of_the_mode(api, world, settings, mode):
    close, far = plant(world.tenant, [CLOSE, FAR])
    keyword = scores(api, world.admin.headers, "keyword")
    semantic = scores(api, world.admin.headers, "semantic")
    kw_floor = (keyword[str(close.fact_id)] + keyword[str(far.fact_id)]) / 2
    sem_floor = (semantic[str(close.fact_id)] + semantic[str(far.fact_id)]) / 2
    # given floors (the deployment's settings) between the close and the far match, each leg's
    settings.RELEVANCE_THRESHOLDS = {
        **settings.RELEVANCE_THRESHOLDS,
        "facts.keyword": kw_floor,
        "facts.semantic": sem_floor,
        "facts.hybrid.keyword": kw_floor,
        "facts.hybrid.semantic": sem_floor,
    }
    # when searching without abstain, then with it
    plain = search(api, world.admin.headers, mode=mode, query=QUERY)
    abstaining = search(api, world.admin.headers, mode=mode, query=QUERY, abstain=True)
    # then only the abstaining search drops the far match
    assert set(hit_ids(plain)) == {str(close.fact_id), str(far.fact_id)}
    assert hit_ids(abstaining) == [str(close.fact_id)]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_abstain_answers_nothing_when_every_hit_is_under_the_floor(api, world, settings, mode):
    plant(world.tenant, [FAR, "a note about the weather"])
    settings.RELEVANCE_THRESHOLDS = dict.fromkeys(settings.RELEVANCE_THRESHOLDS, 500.0)
    response = search(api, world.admin.headers, mode=mode, query=QUERY, abstain=True)
    assert response.status_code == 200
    assert response.json() == {"hits": []}


def test_a_floor_never_lets_an_unreadable_fact_through(api, world, settings):
    # given the app's weak match in its project, and a strong one in a project it cannot read
    elsewhere = factories.project_create(world.tenant, world.org)
    [own] = plant(world.tenant, [FAR], org=world.org, project=world.project)
    plant(world.tenant, [CLOSE], org=world.org, project=elsewhere)
    # when the app searches with a floor under both
    for body in ({"abstain": True}, {"min_relevance": -1.0}):
        settings.RELEVANCE_THRESHOLDS = dict.fromkeys(settings.RELEVANCE_THRESHOLDS, -1.0)
        response = search(api, world.app.headers, mode="semantic", query=QUERY, **body)
        # then it finds only what it may read (the guard is the query's, before any floor)
        assert hit_ids(response) == [str(own.fact_id)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mode": "hybrid", "min_relevance": 0.3}, "min_relevance"),
        ({"mode": "semantic", "min_relevance": "0.3"}, "min_relevance"),
        ({"mode": "semantic", "min_relevance": True}, "min_relevance"),
        ({"mode": "semantic", "min_relevance": -1.5}, "min_relevance"),
        ({"mode": "keyword", "abstain": "yes"}, "abstain"),
        ({"mode": "keyword", "abstain": 1}, "abstain"),
    ],
)
def test_bad_abstain_or_min_relevance_is_a_validation_error(api, world, body, field):
    response = search(api, world.admin.headers, query=QUERY, **body)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert set(response.json()) == {"code", "message", "details"}
    assert field in response.json()["details"]
