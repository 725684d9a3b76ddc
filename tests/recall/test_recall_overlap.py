"""A hybrid recall's keyword leg runs while its query is embedded (recall.search), with the
hits it would have one after the other."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from embeddings.providers import HashingEmbedder
from kindmem.access import readers_for
from recall.search import RecallQuery, Selection, recall_search, recall_search_embedded
from tests.embedding_probes import WaitingEmbedder, releasing_on

pytestmark = pytest.mark.django_db


def test_the_keyword_leg_runs_while_the_query_is_embedded_with_the_same_hits(
    world, history, monkeypatch, settings
) -> None:
    # given: an embedder (no query cache) that answers only once the keyword leg has been read
    settings.EMBEDDER = "hashing"
    settings.QUERY_CACHE_SIZE = 0
    released = threading.Event()
    embedder = WaitingEmbedder(released)
    monkeypatch.setattr("embeddings.providers.get_embedder", lambda: embedder)
    asked = RecallQuery(
        tenant_id=world.tenant.id,
        readers=readers_for(world.app.principal),
        selections=[Selection(agent_id="support-bot")],
        mode="hybrid",
        top_k=3,
        roles=("user", "agent"),
        query="refund for my parcel",
    )

    # when: a hybrid recall runs, the keyword leg (the only statement that reads the messages'
    # search column) releasing the embedder when it reaches the server
    with connection.execute_wrapper(releasing_on('"recall_message"."search" @@', released)):
        hits = recall_search(request=asked)

    # then: the embedder did not wait out its timeout, and the hits are those of the same
    # recall with the vector given up front
    assert embedder.calls == 1
    assert not embedder.waited_out
    [vector] = HashingEmbedder().embed(["refund for my parcel"])
    alone = recall_search_embedded(request=asked, vector=vector, model=HashingEmbedder().model)
    assert [(h.message.pk, h.ranks, h.before, h.after) for h in hits] == [
        (h.message.pk, h.ranks, h.before, h.after) for h in alone
    ]
    assert len(hits) == 3
