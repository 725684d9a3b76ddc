"""Recalling earlier conversations (POST /v1/recall): its modes (list, keyword, semantic, hybrid,
reranked), and what a recall costs in queries, bad input and a failing embedder."""

from __future__ import annotations

import pytest

from tests import factories
from tests.conftest import AUDIT_QUERIES, TENANT_QUERIES
from tests.recall.conftest import BOT, conversation_create, recall, texts


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "text": text}


def _agent(text: str) -> dict[str, str]:
    return {"role": "agent", "text": text}


# Each history message's (before, after) neighbours among user and agent messages (tool skipped).
NEIGHBOURS_USER_AND_AGENT = {
    "My parcel never arrived": (None, _agent("Sorry, I will open a refund")),
    "Sorry, I will open a refund": (
        _user("My parcel never arrived"),
        _user("Thanks, the refund is fine"),
    ),
    "Thanks, the refund is fine": (_agent("Sorry, I will open a refund"), None),
    "How do I reset my password": (None, _agent("Use the reset link")),
    "Use the reset link": (_user("How do I reset my password"), None),
    "I want a refund for my shoes": (None, None),
}


# ---- modes ----------------------------------------------------------------------------


def test_list_recalls_the_newest_user_messages_first(api, world, history):
    response = recall(api, world.app.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == [
        "I want a refund for my shoes",
        "How do I reset my password",
        "Thanks, the refund is fine",
        "My parcel never arrived",
    ]
    assert all(hit["score"] is None for hit in response.json()["hits"])


def test_top_k_caps_the_hits(api, world, history):
    response = recall(api, world.app.headers, selections=BOT, mode="list", top_k=2)
    assert len(texts(response)) == 2


def test_keyword_recall_ranks_full_text_matches_and_stems(api, world, history):
    # "refunds" matches "refund" (english stemming); the tool message never matches
    response = recall(
        api, world.app.headers, selections=BOT, mode="keyword", query="refunds", top_k=10
    )
    assert sorted(texts(response)) == ["I want a refund for my shoes", "Thanks, the refund is fine"]
    scores = [hit["score"] for hit in response.json()["hits"]]
    assert all(s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_keyword_recall_understands_web_search_syntax(api, world, history):
    response = recall(
        api, world.app.headers, selections=BOT, mode="keyword", query="refund -shoes", top_k=10
    )
    assert texts(response) == ["Thanks, the refund is fine"]


def test_keyword_recall_finds_a_question_whose_words_are_spread_over_a_message(api, world, history):
    # the question's words are not all in one message: "when", "did", the customer's name
    response = recall(
        api,
        world.app.headers,
        selections=BOT,
        mode="keyword",
        query="When did Alice's parcel arrive?",
        top_k=10,
    )
    assert texts(response) == ["My parcel never arrived"]


def test_keyword_recall_ranks_messages_covering_more_of_the_question_first(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=BOT,
        mode="keyword",
        query="refund for the shoes I bought",
        top_k=10,
    )
    assert texts(response) == ["I want a refund for my shoes", "Thanks, the refund is fine"]
    assert [h["ranks"] for h in response.json()["hits"]] == [{"keyword": 1}, {"keyword": 2}]


def test_keyword_recall_keeps_a_quoted_phrase_required(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=BOT,
        mode="keyword",
        query='"reset my password" refund',
        top_k=10,
    )
    assert texts(response) == ["How do I reset my password"]


def test_hybrid_recall_is_the_fused_order_of_its_legs_and_hits_carry_neighbours(
    api, world, hashing_embedder, history
):
    from embeddings.providers import HashingEmbedder
    from kindmem.access import readers_for
    from recall.search import RecallQuery, Selection, keyword_leg, recallable, semantic_leg
    from retrieval.fusion import HYBRID

    # given a question some messages match by words and others by meaning
    query = "refund for my parcel"
    body = {"selections": BOT, "mode": "hybrid", "query": query, "roles": ["user", "agent"]}
    # when recalled in hybrid mode
    response = recall(api, world.app.headers, **body, top_k=3)
    # then the hits are the weighted fusion of the two legs, each HYBRID.depth deep, cut to top_k
    request = RecallQuery(
        tenant_id=world.tenant.id,
        readers=readers_for(world.app.principal),
        selections=[Selection(agent_id="support-bot")],
        mode="hybrid",
        top_k=3,
        roles=("user", "agent"),
        query=query,
    )
    base = recallable(request)
    depth = HYBRID.depth(3)
    hashing = HashingEmbedder()
    [vector] = hashing.embed([query])
    legs = {
        "keyword": [m for m, _ in keyword_leg(base, query, depth)],
        "semantic": [m for m, _ in semantic_leg(base, depth, vector, hashing.model)],
    }
    expected = HYBRID.fuse(legs, key=lambda m: m.pk)[:3]
    hits = response.json()["hits"]
    assert texts(response) == [f.item.text for f in expected]
    assert [h["ranks"] for h in hits] == [f.ranks for f in expected]
    assert [h["score"] for h in hits] == pytest.approx([f.score for f in expected])
    assert any(len(h["ranks"]) == 2 for h in hits)
    # and every hit carries its neighbours of the asked roles, as in the other modes
    for hit in hits:
        before, after = NEIGHBOURS_USER_AND_AGENT[hit["message"]["text"]]
        assert hit["message"]["before"] == before
        assert hit["message"]["after"] == after
    assert any(h["message"]["before"] or h["message"]["after"] for h in hits)


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_reranked_recall_keeps_the_same_hits_reordered_with_their_neighbours(
    api, world, hashing_embedder, history, settings, mode
):
    # given a recall whose pool (all of the reader's messages) fits in one page
    body = {"selections": BOT, "mode": mode, "query": "refund parcel", "roles": ["user", "agent"]}
    before = recall(api, world.app.headers, **body, top_k=10).json()["hits"]
    # when every reranker that applies to messages is on
    settings.RERANK = ("mmr", "recency")
    after = recall(api, world.app.headers, **body, top_k=10).json()["hits"]
    # then the same messages, each with the neighbours it had
    assert before
    assert sorted(h["message"]["text"] for h in after) == sorted(
        h["message"]["text"] for h in before
    )
    neighbours = {
        h["message"]["text"]: (h["message"]["before"], h["message"]["after"]) for h in before
    }
    assert all(
        (h["message"]["before"], h["message"]["after"]) == neighbours[h["message"]["text"]]
        for h in after
    )


def test_hybrid_recall_without_an_embedder_fails_loudly(api, world, history):
    response = recall(
        api, world.app.headers, selections=BOT, mode="hybrid", query="refund", top_k=3
    )
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


def test_semantic_recall_finds_the_nearest_message_first(api, world, hashing_embedder, history):
    response = recall(
        api,
        world.app.headers,
        selections=BOT,
        mode="semantic",
        query="reset my password",
        top_k=3,
    )
    assert texts(response)[0] == "How do I reset my password"
    scores = [hit["score"] for hit in response.json()["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert -1.0 <= scores[-1] <= scores[0] <= 1.0 + 1e-6


def test_semantic_recall_without_an_embedder_fails_loudly(api, world, history):
    response = recall(
        api, world.app.headers, selections=BOT, mode="semantic", query="password", top_k=3
    )
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


def test_semantic_recall_skips_messages_stored_before_an_embedder_was_configured(
    api, world, settings
):
    # given one message stored without an embedder, one with
    conversation_create(world, "old", ("user", "password reset please"), participant_id="p")
    settings.EMBEDDER = "hashing"
    conversation_create(world, "new", ("user", "password reset again"), participant_id="p")
    # when recalled by meaning, only the embedded one can be found
    response = recall(
        api, world.app.headers, selections=BOT, mode="semantic", query="password reset", top_k=5
    )
    assert texts(response) == ["password reset again"]


# ---- queries and bad input -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["list", "keyword", "semantic", "hybrid"])
def test_recall_costs_the_same_few_queries_however_many_hits(
    api, world, hashing_embedder, django_assert_num_queries, mode
):
    # given many conversations with many messages
    for n in range(8):
        conversation_create(
            world,
            f"conv-{n}",
            *[("user", f"refund question {n}-{i}") for i in range(3)],
            participant_id=f"cust-{n}",
        )
    minted = factories.run_create(
        world.app, world.project, participant_id="cust-0", thread_id="conv-0"
    )
    body = {"selections": BOT, "mode": mode, "top_k": 20}
    if mode != "list":
        body["query"] = "refund question"
    # when an app recalls: auth (1) + its readers (1) + hits (1; hybrid: 2, one per leg) +
    # neighbours (1), plus the transaction around the semantic query (savepoint, SET LOCAL,
    # release), and the audit event
    expected = {"list": 4, "keyword": 4, "semantic": 7, "hybrid": 8}[mode]
    expected += TENANT_QUERIES + AUDIT_QUERIES
    recall(api, world.app.headers, **body)  # the key's first use records last_used_at
    recall(api, minted.headers, **body)
    with django_assert_num_queries(expected):
        response = recall(api, world.app.headers, **body)
    # then all hits came with their neighbours
    assert len(response.json()["hits"]) == 20
    assert sum(1 for h in response.json()["hits"] if h["message"]["before"]) >= 12
    # and a run's readers come from its token alone: one query fewer
    with django_assert_num_queries(expected - 1):
        response = recall(api, minted.headers, **body)
    assert len(response.json()["hits"]) == 3


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"mode": "list"},
        {"selections": [], "mode": "list"},
        {"selections": [{}], "mode": "list"},
        {"selections": BOT, "mode": "fuzzy"},
        {"selections": BOT, "mode": "keyword"},
        {"selections": BOT, "mode": "keyword", "query": "   "},
        {"selections": BOT, "mode": "hybrid"},
        {"selections": BOT, "mode": "list", "query": "x"},
        {"selections": BOT, "mode": "list", "top_k": 0},
        {"selections": BOT, "mode": "list", "top_k": 101},
        {"selections": BOT, "mode": "list", "roles": ["tool"]},
        {"selections": BOT, "mode": "list", "roles": []},
        {"selections": [{"agent_id": "support-bot", "before_sequence": 3}], "mode": "list"},
        {"selections": [{"agent_id": "support-bot", "user_id": "not-a-uuid"}], "mode": "list"},
        {"selections": [{"agent_id": "support-bot", "project_id": "7"}], "mode": "list"},
        {"selections": BOT, "mode": "keyword", "query": "x" * 2001},
        {"selections": "support-bot", "mode": "list"},
    ],
)
def test_bad_recall_input_is_a_400(api, world, body):
    response = recall(api, world.app.headers, **body)
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "validation-error"


def test_recall_needs_a_credential(api, world):
    response = recall(api, {}, selections=BOT, mode="list")
    assert response.status_code == 401


def test_semantic_recall_when_the_embedder_fails_is_unavailable_not_empty(
    api, world, hashing_embedder, history, monkeypatch
):
    from embeddings.providers import EmbeddingFailed, HashingEmbedder

    def broken(self, texts):
        raise EmbeddingFailed("timeout")

    monkeypatch.setattr(HashingEmbedder, "embed", broken)
    response = recall(
        api, world.app.headers, selections=BOT, mode="semantic", query="password", top_k=3
    )
    assert response.status_code == 503
    assert response.json()["code"] == "embedding-unavailable"


@pytest.mark.parametrize("query", ["-", "or", '"" ""', "- or -", '-""', "the of and"])
def test_a_keyword_recall_with_nothing_to_search_with_finds_nothing_not_a_500(
    api, world, history, query
):
    # given a history, when the query's words leave nothing to search with
    response = recall(api, world.app.headers, selections=BOT, mode="keyword", query=query)
    # then: no hits, as fact search answers it, never an error
    assert response.status_code == 200, response.content
    assert response.json()["hits"] == []
