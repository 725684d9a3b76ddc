"""Fact search (`POST /v1/facts/search`): keyword search on questions (coverage, rare words,
stems, phrases, exclusions), and what never appears (expired, pending, superseded, deleted; other
models' vectors) or what narrows the hits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from facts import services
from facts.models import Revision
from tests.facts.search.conftest import hit_ids, plant, search

pytestmark = pytest.mark.django_db


# --- keyword search on questions ---------------------------------------------------------------


def test_a_question_whose_words_are_spread_over_a_fact_finds_it_by_keyword(api, world):
    # given a fact that has some of the question's words and not others (the name, "when")
    [sunrise, _] = plant(world.tenant, ["Painted a sunrise over the lake in May", "Likes tea"])
    # when an agent asks a question by keyword
    response = search(
        api, world.admin.headers, mode="keyword", query="When did Melanie paint a sunrise?"
    )
    # then the fact is found (every word of the question is optional), and only it
    assert response.status_code == 200
    assert hit_ids(response) == [str(sunrise.fact_id)]


def test_a_fact_covering_more_of_the_query_ranks_above_one_covering_fewer(api, world):
    # given facts of the same length covering three, two and one of the query's words
    three, two, one = plant(
        world.tenant,
        [
            "painted a sunrise over the lake",
            "painted a sunrise over the fence",
            "painted a barn over the fence",
        ],
    )
    # when searching for all three words
    response = search(api, world.admin.headers, mode="keyword", query="paint sunrise lake")
    # then more coverage ranks higher, with strictly higher scores
    assert hit_ids(response) == [str(r.fact_id) for r in (three, two, one)]
    scores = [h["score"] for h in response.json()["hits"]]
    assert scores[0] > scores[1] > scores[2] > 0


def test_a_rare_word_counts_more_than_a_word_every_match_has(api, world):
    # given the person's name in three facts, and "sunrise" in one other, longer one
    sunrise, *_ = plant(
        world.tenant,
        [
            "a sunrise at dawn over the quiet hills",
            "Melanie painted a fence",
            "Melanie painted a barn",
            "Melanie likes green tea",
        ],
    )
    # when asking for the name and the rare word
    response = search(api, world.admin.headers, mode="keyword", query="Melanie sunrise")
    # then the fact with the rare word comes first (a word most matches have says little), and
    # all four match
    ids = hit_ids(response)
    assert ids[0] == str(sunrise.fact_id)
    assert len(ids) == 4


def test_two_words_that_stem_alike_count_once(api, world):
    # given two facts of the same length, one with "paint", one with "sunrise"
    plant(world.tenant, ["painted the fence", "a sunrise view"])
    # when the query says "paint" twice over (one lexeme) and "sunrise" once
    response = search(
        api, world.admin.headers, mode="keyword", query="paint painting painted sunrise"
    )
    # then each fact has one of the query's terms, and they score the same
    [first, second] = [h["score"] for h in response.json()["hits"]]
    assert first == pytest.approx(second)


def test_a_quoted_phrase_still_requires_the_phrase(api, world):
    # given one fact with the phrase, one with both words apart, one with one of them
    phrase, apart, _ = plant(
        world.tenant,
        ["green tea every morning", "tea that is green, in the morning", "green apples"],
    )
    # when the query quotes the phrase, alone or beside plain words
    quoted = search(api, world.admin.headers, mode="keyword", query='"green tea"')
    mixed = search(api, world.admin.headers, mode="keyword", query='morning "green tea" apples')
    # then only the fact with the words in that order, adjacent, matches; the plain words rank
    assert hit_ids(quoted) == [str(phrase.fact_id)]
    assert hit_ids(mixed) == [str(phrase.fact_id)]
    assert str(apart.fact_id) not in hit_ids(mixed)


def test_a_quoted_single_word_is_required(api, world):
    coffee, _ = plant(world.tenant, ["coffee in the morning", "tea in the morning"])
    response = search(api, world.admin.headers, mode="keyword", query='"coffee" morning tea')
    assert hit_ids(response) == [str(coffee.fact_id)]


def test_a_minus_word_or_phrase_excludes_what_matches_it(api, world):
    keep, _, _ = plant(
        world.tenant, ["coffee every morning", "decaf coffee at night", "coffee and green tea"]
    )
    response = search(api, world.admin.headers, mode="keyword", query='coffee -decaf -"green tea"')
    assert hit_ids(response) == [str(keep.fact_id)]


def test_a_query_of_stop_words_only_finds_nothing_by_keyword_and_hybrid_answers_by_meaning(
    api, world
):
    # given facts (every text has some words that are not stop words)
    plant(world.tenant, ["who is she", "Painted a sunrise", "Likes tea"])
    # when the query has no searchable word, only stop words
    keyword = search(api, world.admin.headers, mode="keyword", query="Who is it? Is it her?")
    hybrid = search(api, world.admin.headers, mode="hybrid", query="Who is it? Is it her?")
    semantic = search(api, world.admin.headers, mode="semantic", query="Who is it? Is it her?")
    # then keyword search finds nothing (not an error: a question is valid input), and hybrid is
    # the semantic leg's order alone
    assert keyword.status_code == 200
    assert keyword.json()["hits"] == []
    assert hybrid.status_code == 200
    assert hit_ids(hybrid) == hit_ids(semantic)
    assert all(set(h["ranks"]) == {"semantic"} for h in hybrid.json()["hits"])


# --- what never appears ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_expired_pending_superseded_and_deleted_revisions_never_appear(api, world, mode):
    # given one live fact and others that are expired, pending review, superseded or deleted
    p = world.admin.principal
    kept = services.fact_create(principal=p, type="note", content="alpha beta gamma").revision
    expired = services.fact_create(principal=p, type="note", content="alpha beta expired")
    Revision.objects.filter(pk=expired.revision.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    pending = services.fact_create(principal=p, type="note", content="alpha beta pending")
    Revision.objects.filter(pk=pending.revision.pk).update(review="pending")
    old = services.fact_create(principal=p, type="note", content="alpha beta old words")
    services.fact_supersede(principal=p, fact_id=old.revision.fact_id, content="zzz yyy")
    gone = services.fact_create(principal=p, type="note", content="alpha beta deleted")
    services.fact_delete(principal=p, fact_id=gone.revision.fact_id)
    # when the admin searches for what they all share
    response = search(api, world.admin.headers, mode=mode, query="alpha beta", top_k=100)
    # then only the live fact, and the superseding revision only if the leg finds "zzz yyy"
    revisions = [h["fact"]["revision_id"] for h in response.json()["hits"]]
    assert str(kept.pk) in revisions
    assert str(old.revision.pk) not in revisions
    assert str(expired.revision.pk) not in revisions
    assert str(gone.revision.pk) not in revisions
    assert not Revision.objects.filter(pk__in=revisions, review__isnull=False).exists(), (
        "a fact pending review was retrieved"
    )


def test_valid_at_type_tags_and_scope_narrow_the_hits(api, world):
    p = world.admin.principal
    now = timezone.now()
    services.fact_create(
        principal=p,
        type="preference",
        content="likes green tea",
        tags=["drinks"],
        scope={"project_id": str(world.project.id)},
        valid_from=now - timedelta(days=10),
        valid_until=now - timedelta(days=5),
    )
    current = services.fact_create(
        principal=p,
        type="preference",
        content="likes black tea",
        tags=["drinks", "current"],
        scope={"project_id": str(world.project.id)},
    ).revision
    services.fact_create(principal=p, type="note", content="tea shop notes")
    body = {"mode": "hybrid", "query": "tea", "top_k": 10}
    # when narrowed by type, tags, scope and a validity instant
    past = search(api, world.admin.headers, **body, valid_at=(now - timedelta(days=7)).isoformat())
    today = search(api, world.admin.headers, **body, valid_at=now.isoformat())
    typed = search(api, world.admin.headers, **body, type="preference", tags=["current"])
    scoped = search(api, world.admin.headers, **body, scope={"project_id": str(world.project.id)})
    # then each hit list holds only what matches every narrowing
    assert len(past.json()["hits"]) == 3  # the old preference was valid then
    assert str(current.pk) in [h["fact"]["revision_id"] for h in today.json()["hits"]]
    assert len(today.json()["hits"]) == 2  # ... and is not now
    assert [h["fact"]["revision_id"] for h in typed.json()["hits"]] == [str(current.pk)]
    assert {h["fact"]["type"] for h in scoped.json()["hits"]} == {"preference"}


def test_a_revision_embedded_with_another_model_is_not_searched_semantically(api, world):
    # given a fact whose vector came from another model
    [revision] = plant(world.tenant, ["quantum physics lecture"])
    Revision.objects.filter(pk=revision.pk).update(embedding_model="some-other-model")
    # when searching by meaning, and by keyword
    semantic = search(api, world.admin.headers, mode="semantic", query="quantum physics lecture")
    keyword = search(api, world.admin.headers, mode="keyword", query="quantum physics lecture")
    # then the semantic leg ignores the foreign space; the keyword leg still finds it
    assert semantic.json()["hits"] == []
    assert hit_ids(keyword) == [str(revision.fact_id)]


# --- the bound on a whole-tenant reader's candidates (retrieval.fulltext.CANDIDATES_PER_TERM) ---


@pytest.fixture
def two_per_word(monkeypatch):
    """The keyword bound lowered to two rows per word, for the test: its compiled shapes (which
    hold the limit) are made again before and after it."""
    import compiled
    from retrieval import fulltext

    monkeypatch.setattr(fulltext, "CANDIDATES_PER_TERM", 2)
    compiled.forget()
    yield
    compiled.forget()


def test_a_whole_tenant_reader_ranks_a_bounded_set_of_readable_matches(api, world, two_per_word):
    # given: four expired facts with the word, then three live ones, all in the app's project
    expired = plant(world.tenant, ["zqpebble on the shore"] * 4, project=world.project)
    Revision.objects.filter(pk__in=[r.pk for r in expired]).update(
        expires_at=timezone.now() - timedelta(days=1)
    )
    live = {
        str(r.fact_id)
        for r in plant(world.tenant, ["zqpebble in a jar"] * 3, project=world.project)
    }

    # when: the tenant's admin (every row of the tenant) searches for the word
    admin = hit_ids(search(api, world.admin.headers, mode="keyword", query="zqpebble", top_k=10))
    # then: it ranks two candidates, both live: an unreadable row never takes a place
    assert len(admin) == 2
    assert set(admin) <= live

    # when: an app key of the project (a narrower reader) searches: every match is ranked
    app = hit_ids(search(api, world.app.headers, mode="keyword", query="zqpebble", top_k=10))
    assert set(app) == live
    assert len(app) == 3
