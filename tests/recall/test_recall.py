"""Recalling earlier conversations: POST /v1/recall."""

from __future__ import annotations

import uuid

import pytest

from kindmem.models import ErasureHold
from tests import factories
from tests.conftest import AUDIT_QUERIES, TENANT_QUERIES
from tests.recall.conftest import conversation_create, recall


def texts(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [hit["message"]["text"] for hit in response.json()["hits"]]


BOT = [{"agent_id": "support-bot"}]


@pytest.fixture
def history(world):
    """Two earlier conversations of end user cust-1 and one of cust-2, in the world's project."""
    conversation_create(
        world,
        "c1",
        ("user", "My parcel never arrived"),
        ("agent", "Sorry, I will open a refund"),
        ("tool", "refund_open(parcel)"),
        ("user", "Thanks, the refund is fine"),
        participant_id="cust-1",
        segments=("acme", "emea"),
    )
    conversation_create(
        world,
        "c2",
        ("user", "How do I reset my password"),
        ("agent", "Use the reset link"),
        participant_id="cust-1",
        segments=("acme", "us"),
    )
    conversation_create(
        world,
        "c3",
        ("user", "I want a refund for my shoes"),
        participant_id="cust-2",
        segments=("globex",),
    )


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
    from kindmem.fusion import HYBRID
    from recall.search import RecallQuery, Selection, keyword_leg, recallable, semantic_leg

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


# ---- roles and neighbours --------------------------------------------------------------


def test_hits_carry_their_neighbours_of_the_requested_roles(api, world, history):
    # given the default roles (user only): neighbours are the user's own messages
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c1"}],
        mode="list",
        top_k=10,
    )
    hits = {h["message"]["text"]: h["message"] for h in response.json()["hits"]}
    assert hits["Thanks, the refund is fine"]["before"] == {
        "role": "user",
        "text": "My parcel never arrived",
    }
    assert hits["Thanks, the refund is fine"]["after"] is None
    assert hits["My parcel never arrived"]["before"] is None


def test_recalling_agent_messages_too_makes_them_hits_and_neighbours_but_never_tool_ones(
    api, world, history
):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c1"}],
        mode="list",
        roles=["user", "agent"],
        top_k=10,
    )
    hits = {h["message"]["text"]: h["message"] for h in response.json()["hits"]}
    assert set(hits) == {
        "My parcel never arrived",
        "Sorry, I will open a refund",
        "Thanks, the refund is fine",
    }
    # the tool message between them is skipped
    assert hits["Thanks, the refund is fine"]["before"] == {
        "role": "agent",
        "text": "Sorry, I will open a refund",
    }
    assert hits["Sorry, I will open a refund"]["after"]["text"] == "Thanks, the refund is fine"
    assert hits["Sorry, I will open a refund"]["role"] == "agent"


def test_agent_messages_only(api, world, history):
    response = recall(
        api, world.app.headers, selections=BOT, mode="list", roles=["agent"], top_k=10
    )
    assert texts(response) == ["Use the reset link", "Sorry, I will open a refund"]


def test_a_hit_names_its_conversation_and_containers(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "c3"}],
        mode="list",
        top_k=1,
    )
    message = response.json()["hits"][0]["message"]
    assert message["conversation_id"] == "c3"
    assert message["sequence"] == 1
    assert message["role"] == "user"
    assert message["agent_id"] == "support-bot"
    assert message["project_id"] == str(world.project.id)
    assert message["participant_id"] == "cust-2"
    assert message["user_id"] is None
    assert message["created_at"]


# ---- selections ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ({"conversation_id": "c1"}, {"My parcel never arrived", "Thanks, the refund is fine"}),
        ({"conversation_id": "c1", "before_sequence": 4}, {"My parcel never arrived"}),
        (
            {"exclude_conversation_id": "c1"},
            {"How do I reset my password", "I want a refund for my shoes"},
        ),
        (
            {"participant_id": "cust-1"},
            {
                "My parcel never arrived",
                "Thanks, the refund is fine",
                "How do I reset my password",
            },
        ),
        (
            {"participant_id": "cust-1", "exclude_conversation_id": "c1"},
            {"How do I reset my password"},
        ),
        (
            {"segments_prefix": ["acme"]},
            {
                "My parcel never arrived",
                "Thanks, the refund is fine",
                "How do I reset my password",
            },
        ),
        ({"segments_prefix": ["acme", "us"]}, {"How do I reset my password"}),
        ({"segments_prefix": ["acme", "us", "nyc"]}, set()),
        ({"segments_prefix": ["emea"]}, set()),
        ({"participant_id": "nobody"}, set()),
        ({"conversation_id": "nope"}, set()),
    ],
)
def test_each_selection_field_narrows_the_recall(api, world, history, selection, expected):
    response = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", **selection}],
        mode="list",
        top_k=50,
    )
    assert set(texts(response)) == expected


def test_selection_by_project_and_user(api, world):
    other_project = factories.project_create(world.tenant, world.org)
    world.app.key.projects.add(other_project)
    conversation_create(world, "a", ("user", "in the main project"), participant_id="p")
    conversation_create(
        world, "b", ("user", "in the other project"), participant_id="p", project=other_project
    )
    conversation_create(world, "c", ("user", "for a kindgi user"), user=world.user)
    by_project = recall(
        api,
        world.app.headers,
        selections=[{"agent_id": "support-bot", "project_id": str(other_project.id)}],
        mode="list",
        top_k=10,
    )
    by_user = recall(
        api,
        world.admin.headers,
        selections=[{"agent_id": "support-bot", "user_id": str(world.user.id)}],
        mode="list",
        top_k=10,
    )
    assert texts(by_project) == ["in the other project"]
    assert texts(by_user) == ["for a kindgi user"]


def test_a_selection_is_always_one_agents_conversations(api, world):
    factories.agent_create(world.tenant, agent_id="sales-bot")
    conversation_create(
        world, "s", ("user", "sales talk"), participant_id="p", agent_id="sales-bot"
    )
    conversation_create(world, "h", ("user", "support talk"), participant_id="p")
    response = recall(
        api, world.app.headers, selections=[{"agent_id": "sales-bot"}], mode="list", top_k=10
    )
    assert texts(response) == ["sales talk"]


def test_selections_merge_as_any_of_them(api, world, history):
    response = recall(
        api,
        world.app.headers,
        selections=[
            {"agent_id": "support-bot", "conversation_id": "c2"},
            {"agent_id": "support-bot", "participant_id": "cust-2"},
        ],
        mode="list",
        top_k=10,
    )
    assert set(texts(response)) == {"How do I reset my password", "I want a refund for my shoes"}


# ---- the guard -------------------------------------------------------------------------


def test_a_run_recalls_its_own_persons_earlier_conversations_and_no_one_elses(api, world, history):
    # given a new run for cust-1, in a new conversation
    minted = factories.run_create(world.app, world.project, participant_id="cust-1", thread_id="c9")
    # when it recalls everything of the agent
    response = recall(api, minted.headers, selections=BOT, mode="list", top_k=10)
    # then it sees cust-1's conversations, never cust-2's
    assert set(texts(response)) == {
        "My parcel never arrived",
        "Thanks, the refund is fine",
        "How do I reset my password",
    }


def test_a_run_without_a_person_recalls_only_its_own_conversation(api, world, history):
    conversation_create(world, "c9", ("user", "anonymous chat"))
    minted = factories.run_create(world.app, world.project, participant_id=None, thread_id="c9")
    response = recall(api, minted.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == ["anonymous chat"]


def test_a_kindgi_user_never_opens_an_end_users_conversation(api, world, history):
    # the user key has the project, but no end user is that user
    conversation_create(world, "mine", ("user", "my own chat"), user=world.user)
    response = recall(api, world.user_key.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == ["my own chat"]


def test_a_conversation_with_an_end_user_is_not_opened_by_the_user_its_turns_acted_for(api, world):
    conversation_create(world, "x", ("user", "cust chat"), participant_id="cust-7", user=world.user)
    response = recall(api, world.user_key.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == []


def test_an_app_recalls_every_end_users_conversations_in_its_projects_only(api, world, history):
    other_project = factories.project_create(world.tenant, world.org)
    conversation_create(
        world, "elsewhere", ("user", "other project"), participant_id="p", project=other_project
    )
    response = recall(api, world.app.headers, selections=BOT, mode="list", top_k=10)
    assert "other project" not in texts(response)
    assert len(texts(response)) == 4


def test_a_tenant_admin_recalls_everything_of_its_tenant_and_nothing_of_another(
    api, world, other_world, history
):
    mine = recall(api, world.admin.headers, selections=BOT, mode="list", top_k=10)
    theirs = recall(api, other_world.admin.headers, selections=BOT, mode="list", top_k=10)
    assert len(texts(mine)) == 4
    assert texts(theirs) == []


def test_the_same_thread_id_in_two_tenants_is_two_conversations(api, world, other_world):
    conversation_create(world, "same", ("user", "tenant one"), participant_id="p")
    conversation_create(other_world, "same", ("user", "tenant two"), participant_id="p")
    response = recall(
        api,
        other_world.admin.headers,
        selections=[{"agent_id": "support-bot", "conversation_id": "same"}],
        mode="keyword",
        query="tenant",
        top_k=10,
    )
    assert texts(response) == ["tenant two"]


@pytest.mark.parametrize(("kind", "subject"), [("participant", "cust-2"), ("conversation", "c3")])
def test_messages_of_held_persons_are_never_recalled(api, world, history, kind, subject):
    ErasureHold.objects.create(
        tenant=world.tenant, subject_kind=kind, subject_id=subject, erasure_id=uuid.uuid4()
    )
    response = recall(
        api, world.admin.headers, selections=BOT, mode="keyword", query="refund", top_k=10
    )
    assert texts(response) == ["Thanks, the refund is fine"]


def test_messages_of_a_held_kindgi_user_are_never_recalled(api, world):
    conversation_create(world, "u", ("user", "my own chat"), user=world.user)
    ErasureHold.objects.create(
        tenant=world.tenant,
        subject_kind="user",
        subject_id=str(world.user.id),
        erasure_id=uuid.uuid4(),
    )
    response = recall(api, world.admin.headers, selections=BOT, mode="list", top_k=10)
    assert texts(response) == []


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
