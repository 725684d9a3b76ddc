"""Fact search (`POST /v1/facts/search`): keyword, semantic and hybrid legs, each guarded in its
SQL before its LIMIT; loud failure without an embedder; embedding on write and later."""

from __future__ import annotations

import math
import os
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from embeddings.providers import HashingEmbedder
from facts import provenance, scopes, services
from facts.models import EmbeddingState, Fact, Revision, Subject
from facts.search import FactSearch, keyword_leg, semantic_leg
from kindmem.access import readers_for
from kindmem.fulltext import KeywordQuery
from kindmem.fusion import HYBRID, fuse_by_rank
from kindmem.models import ErasureHold
from tests import factories
from tests.conftest import AUDIT_QUERIES, TENANT_QUERIES
from tests.facts.conftest import Reply
from tests.facts.test_access import Containers, cases, containers, reference  # noqa: F401

pytestmark = pytest.mark.django_db

URL = "/v1/facts/search"
HASHING = HashingEmbedder()


@pytest.fixture(autouse=True)
def hashing(settings: Any) -> None:
    settings.EMBEDDER = "hashing"
    settings.EMBED_BUDGET_MS = 5_000  # the hashing embedder answers in well under that


def search(api: Any, headers: dict[str, str], **body: Any) -> Any:
    return api.post(URL, body, format="json", **headers)


def plant(tenant: Any, texts: list[str], **fact_fields: Any) -> list[Revision]:
    """Facts written straight to the tables, embedded with the hashing model (fast, many)."""
    kind = fact_fields.pop("type", "note")  # popped once, for every fact alike
    facts = Fact.objects.bulk_create(Fact(tenant=tenant, type=kind, **fact_fields) for _ in texts)
    vectors = HASHING.embed(texts)
    return Revision.objects.bulk_create(
        Revision(
            tenant=tenant,
            fact=fact,
            version=1,
            content={"text": text},
            content_hash=provenance.content_hash({"text": text}, None, None),
            attributed_kind="service",
            attributed_id="test",
            search_text=text,
            embedding=vector,
            embedding_model=HASHING.model,
            embedding_state=EmbeddingState.DONE,
        )
        for fact, text, vector in zip(facts, texts, vectors, strict=True)
    )


def hit_ids(response: Any) -> list[str]:
    return [h["fact"]["id"] for h in response.json()["hits"]]


# --- the guard holds in every leg --------------------------------------------------------------


def test_a_reader_gets_its_own_top_k_in_every_mode_despite_thousands_of_closer_foreign_facts(
    api, world, other_world
):
    # given a run for participant p1 with 30 facts of its own mentioning espresso coffee
    run = factories.run_create(world.app, world.project, participant_id="p1", thread_id=None)
    scope = {"org": world.org, "project": world.project, "participant_id": "p1"}
    own = plant(world.tenant, [f"p1 note {i} mentions espresso coffee" for i in range(30)], **scope)
    # and thousands of facts nearer the query, and better keyword matches: in another tenant,
    # and for another participant of the same project
    closer = [f"espresso coffee espresso coffee {i}" for i in range(1000)]
    plant(other_world.tenant, closer, org=other_world.org, project=other_world.project)
    plant(world.tenant, closer, org=world.org, project=world.project, participant_id="p2")
    for mode in ("keyword", "semantic", "hybrid"):
        # when the run searches
        response = search(api, run.headers, mode=mode, query="espresso coffee", top_k=10)
        # then it gets ten hits, all its own, none of theirs
        assert response.status_code == 200, response.json()
        ids = hit_ids(response)
        assert len(ids) == 10, mode
        assert set(ids) <= {str(r.fact_id) for r in own}, mode


def test_a_search_never_returns_another_tenants_fact_even_to_its_admin(api, world, other_world):
    # given a fact in another tenant that matches exactly
    plant(other_world.tenant, ["the secret launch date"])
    # when this tenant's admin searches in every mode
    for mode in ("keyword", "semantic", "hybrid"):
        response = search(api, world.admin.headers, mode=mode, query="the secret launch date")
        # then nothing is found
        assert response.status_code == 200
        assert response.json()["hits"] == []


WORDS = ["coffee", "tea", "dog", "cat", "paris", "rome"]


def lexemes(*texts: str) -> list[frozenset[str]]:
    """Each text's lexemes under the search configuration (PostgreSQL's stemming, not ours)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.i, coalesce(array_agg(u.lexeme) FILTER (WHERE u.lexeme IS NOT NULL), '{}')"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS t(text, i)"
            " LEFT JOIN LATERAL unnest(to_tsvector('english', t.text)) AS u ON true"
            " GROUP BY t.i ORDER BY t.i",
            [list(texts)],
        )
        return [frozenset(row[1]) for row in cursor.fetchall()]


def bm25_reference(docs: dict[Any, frozenset[str]], words: list[frozenset[str]]) -> list[Any]:
    """The keyword leg's ranking, written out in Python: the docs having any query word (a
    word's lexemes all present), by BM25 with each word counted once, document frequencies
    and average length over those docs; ties by id."""
    from kindmem.fulltext import BM25_B, BM25_K1

    matched = {i: d for i, d in docs.items() if any(w and w <= d for w in words)}
    if not matched:
        return []
    n = len(matched)
    avg = sum(len(d) for d in matched.values()) / n
    df = [sum(1 for d in matched.values() if w and w <= d) for w in words]

    def score(d: frozenset[str]) -> float:
        total = 0.0
        for w, f in zip(words, df, strict=True):
            if w and w <= d:
                total += math.log(1 + (n - f + 0.5) / (f + 0.5))
        return total * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(d) / avg))

    return sorted(matched, key=lambda i: (-score(matched[i]), i))


def exact_semantic(tenant_id: uuid.UUID, vector: list[float]) -> list[uuid.UUID]:
    """The tenant's live vectors by exact cosine distance (no index), with no guard."""
    from pgvector.django import CosineDistance

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
        return list(
            Revision.objects.of_tenant(tenant_id)
            .live()
            .filter(embedding_model=HASHING.model)
            .annotate(d=CosineDistance("embedding", vector))
            .order_by("d", "id")
            .values_list("id", flat=True)
        )


class Rollback(Exception):
    pass


@hypothesis_settings(
    max_examples=int(os.environ.get("KINDMEM_SEARCH_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_each_leg_returns_exactly_the_readable_top_k_of_the_reference(
    containers: Containers,  # noqa: F811
    data: st.DataObject,
) -> None:
    c = containers
    facts, many_readers, held = data.draw(cases(c))
    texts = data.draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
            min_size=len(facts),
            max_size=len(facts),
        )
    )
    query = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" or ".join))
    top_k = data.draw(st.integers(1, 5))
    try:
        with transaction.atomic():
            # given generated facts with generated texts, and erasure holds
            made = Fact.objects.bulk_create(
                Fact(tenant=c.tenant, type="note", **scope) for scope, _ in facts
            )
            revisions = Revision.objects.bulk_create(
                Revision(
                    tenant=c.tenant,
                    fact=fact,
                    version=1,
                    content=text,
                    content_hash=text,
                    attributed_kind="service",
                    attributed_id="t",
                    search_text=text,
                    embedding=vector,
                    embedding_model=HASHING.model,
                    embedding_state=EmbeddingState.DONE,
                )
                for fact, text, vector in zip(made, texts, HASHING.embed(texts), strict=True)
            )
            Subject.objects.bulk_create(
                Subject(tenant=c.tenant, revision=rev, fact=rev.fact, kind=k, subject_id=i)
                for rev, (_, subj) in zip(revisions, facts, strict=True)
                for k, i in subj
            )
            ErasureHold.objects.bulk_create(
                ErasureHold(tenant=c.tenant, subject_kind=k, subject_id=i, erasure_id=uuid.uuid4())
                for k, i in held
            )
            by_id = {
                rev.id: (scope, subj) for rev, (scope, subj) in zip(revisions, facts, strict=True)
            }
            [vector] = HASHING.embed([query])
            semantic_all = exact_semantic(c.tenant.id, vector)
            words = list(dict.fromkeys(lexemes(*KeywordQuery.parse(query).words)))
            text_lexemes = dict(zip([r.id for r in revisions], lexemes(*texts), strict=True))
            for r in many_readers:
                readable = {
                    rid for rid, (scope, subj) in by_id.items() if reference(scope, subj, held, r)
                }
                s = FactSearch(tenant_id=c.tenant.id, readers=r, mode="keyword", query=query)
                # when each leg runs for this reader
                kw = [rev.id for rev, _ in keyword_leg(s, top_k)]
                sem = [rev.id for rev, _ in semantic_leg(s, top_k, vector, HASHING.model)]
                # then each is the reference's readable top-k, in the exact order (the keyword
                # ranking's frequencies are over what this reader may read, nothing else)
                assert set(kw) <= readable
                assert set(sem) <= readable
                keyword_all = bm25_reference({i: text_lexemes[i] for i in readable}, words)
                assert kw == keyword_all[:top_k]
                assert sem == [i for i in semantic_all if i in readable][:top_k]
            raise Rollback
    except Rollback:
        pass


def test_hybrid_is_the_reference_fusion_of_the_two_legs(api, world):
    # given facts where the keyword and semantic orders differ
    scope = {"org": world.org, "project": world.project}
    plant(
        world.tenant,
        [
            "coffee coffee coffee",
            "morning coffee with milk",
            "tea in the morning",
            "black coffee and a morning walk",
            "dogs like walks",
            "coffee",
        ],
        **scope,
    )
    query = "morning coffee"
    search_in = FactSearch(
        tenant_id=world.tenant.id,
        readers=readers_for(world.app.principal),
        mode="hybrid",
        query=query,
        top_k=4,
    )
    # when hybrid search runs through the API
    response = search(api, world.app.headers, mode="hybrid", query=query, top_k=4)
    # then it equals the weighted fusion over the two legs' lists, each as deep as HYBRID says,
    # cut to top_k
    [vector] = HASHING.embed([query])
    depth = HYBRID.depth(4)
    legs = {
        "keyword": [r for r, _ in keyword_leg(search_in, depth)],
        "semantic": [r for r, _ in semantic_leg(search_in, depth, vector, HASHING.model)],
    }
    expected = fuse_by_rank(legs, key=lambda r: r.pk, k=HYBRID.k, weights=HYBRID.weights)[:4]
    hits = response.json()["hits"]
    assert [h["fact"]["revision_id"] for h in hits] == [str(f.item.pk) for f in expected]
    assert [h["ranks"] for h in hits] == [f.ranks for f in expected]
    assert [h["score"] for h in hits] == pytest.approx([f.score for f in expected])
    assert any(len(h["ranks"]) == 2 for h in hits)


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


# --- loud failure, bad input -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_semantic_search_without_an_embedder_fails_loudly(api, world, settings, mode):
    # given facts, and no embedder configured
    plant(world.tenant, ["coffee every morning"])
    settings.EMBEDDER = "none"
    # when searching by meaning
    response = search(api, world.admin.headers, mode=mode, query="coffee")
    # then 503 embedding-unavailable, never an empty list
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


def test_keyword_search_works_without_an_embedder(api, world, settings):
    plant(world.tenant, ["coffee every morning"])
    settings.EMBEDDER = "none"
    response = search(api, world.admin.headers, mode="keyword", query="coffee")
    assert response.status_code == 200
    assert len(response.json()["hits"]) == 1


def test_an_embedder_that_fails_at_query_time_is_embedding_unavailable(
    api, world, settings, embeddings_server
):
    # given an HTTP embedder that answers 500
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "m"
    settings.EMBEDDER_RETRIES = 0
    embeddings_server.default = lambda payload: Reply(status=500, body={"error": "down"})
    # when searching by meaning
    response = search(api, world.admin.headers, mode="hybrid", query="coffee")
    # then 503 embedding-unavailable
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   \n\t"}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 101}, "top_k"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "limit": 5}, "limit"),
        ({"query": "x", "scope": {"project_id": "nope"}}, "scope"),
        ({"query": 7}, "query"),
        ({}, "query"),
    ],
)
def test_bad_search_input_is_a_validation_error(api, world, body, field):
    response = search(api, world.admin.headers, **body)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert field in response.json()["details"]


def test_search_needs_a_credential(api):
    response = api.post(URL, {"query": "x"}, format="json")
    assert response.status_code == 401


# --- the endpoint: query count, audit, shape ---------------------------------------------------


def test_hybrid_search_takes_a_fixed_number_of_queries_whatever_the_hit_count(
    api, world, django_assert_num_queries
):
    # given many hits, each with subjects
    p = world.admin.principal
    for i in range(15):
        services.fact_create(
            principal=p,
            type="note",
            content=f"coffee fact {i}",
            subjects=[scopes.SubjectInput(kind="external", id=f"x{i}")],
        )
    search(api, world.admin.headers, mode="hybrid", query="coffee")  # warm caches
    # when searching: the key; one message with the semantic leg's settings, the keyword leg
    # and the semantic leg's index scan, every row's subjects in its own columns; the exact
    # scan (15 readable rows, fewer than its depth of 30); and the audit event; all inside the
    # view's own savepoint (the test's transaction is outermost)
    with django_assert_num_queries(3 + TENANT_QUERIES + AUDIT_QUERIES):
        response = search(api, world.admin.headers, mode="hybrid", query="coffee", top_k=15)
    # then 15 hits, with a query count that does not grow with them
    assert len(response.json()["hits"]) == 15


def test_a_search_records_one_retrieve_audit_event_with_its_hits(api, world):
    from audit.models import AuditEvent

    p = world.admin.principal
    fact = services.fact_create(
        principal=p,
        type="note",
        content="likes hiking",
        scope={"project_id": str(world.project.id), "participant_id": "p9"},
    ).revision
    response = search(api, world.admin.headers, mode="keyword", query="hiking")
    assert response.status_code == 200
    event = AuditEvent.objects.filter(tenant=world.tenant).order_by("-seq").first()
    assert event.phase == "retrieve"
    assert str(fact.fact_id) in event.object_ids
    assert "participant:p9" in event.subjects
    assert event.query_snapshot["mode"] == "keyword"
    assert event.query_snapshot["top_k"] == 10


def test_a_hit_carries_the_facts_api_shape_score_and_ranks(api, world):
    services.fact_create(principal=world.admin.principal, type="note", content="sailing trip")
    response = search(api, world.admin.headers, mode="keyword", query="sailing")
    [hit] = response.json()["hits"]
    assert hit["ranks"] == {"keyword": 1}
    assert hit["score"] > 0
    assert hit["fact"]["content"] == "sailing trip"
    assert hit["fact"]["type"] == "note"
    assert "embedding" not in hit["fact"]


# --- reranking (kindmem/rerank.py), off unless KINDMEM_RERANK names one -------------------------


def test_the_slot_reranker_moves_a_slots_older_value_below_every_other_hit(api, world, settings):
    # given two facts filling one slot (the older written a month ago), and another fact
    [old] = plant(world.tenant, ["drinks green tea every morning"], type="preference", key="drink")
    plant(world.tenant, ["drinks black tea every morning"], type="preference", key="drink")
    plant(world.tenant, ["a tea plantation trip one morning"])
    Revision.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))
    query = {"mode": "keyword", "query": "drinks tea every morning"}
    before = hit_ids(search(api, world.admin.headers, **query))
    # when the slot reranker is on
    settings.RERANK = ("slot",)
    after = hit_ids(search(api, world.admin.headers, **query))
    # then the same hits, the slot's older value last
    assert sorted(after) == sorted(before)
    assert after == [h for h in before if h != str(old.fact_id)] + [str(old.fact_id)]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_reranked_search_returns_top_k_of_a_deeper_pool_in_one_more_query(
    api, world, settings, mode, django_assert_max_num_queries
):
    # given more coffee facts than a page, and every reranker on
    plant(world.tenant, [f"coffee fact number {i}" for i in range(30)])
    settings.RERANK = ("mmr", "recency", "trust", "slot")
    search(api, world.admin.headers, mode=mode, query="coffee fact")  # warm caches
    # when: the legs as without rerankers (see the fixed-count test above), plus the pool's
    # vectors for mmr in one query
    with django_assert_max_num_queries(9 + TENANT_QUERIES + AUDIT_QUERIES):
        response = search(api, world.admin.headers, mode=mode, query="coffee fact", top_k=5)
    # then a page of top_k, no hit twice
    ids = hit_ids(response)
    assert response.status_code == 200
    assert len(ids) == len(set(ids)) == 5
