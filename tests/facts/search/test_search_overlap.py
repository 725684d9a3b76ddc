"""Work done while the model embeds (issue 16, a cheaper request): a hybrid search's keyword
leg runs while its query is embedded (facts.search), and a write reads what it needs while its
content is embedded (facts.services.fact_create); either way with the same result as one after
the other."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from facts import search as fact_search_module
from facts import services
from facts.models import EmbeddingState
from facts.search import FactSearch, fact_search, fact_search_embedded
from kindmem.access import readers_for
from tests.embedding_probes import WAIT_SECONDS, WaitingEmbedder, releasing_on
from tests.facts.search.conftest import HASHING, plant

pytestmark = pytest.mark.django_db


def test_the_keyword_leg_runs_while_the_query_is_embedded_with_the_same_hits(
    world, monkeypatch, settings
) -> None:
    # given: facts, and an embedder (no query cache) that answers only once the keyword leg
    # has been read
    settings.QUERY_CACHE_SIZE = 0
    plant(world.tenant, [f"coffee order {i}" for i in range(8)] + ["tea at four", "a bike"])
    released = threading.Event()
    embedder = WaitingEmbedder(released)
    monkeypatch.setattr("embeddings.providers.get_embedder", lambda: embedder)
    asked = FactSearch(
        tenant_id=world.tenant.id,
        readers=readers_for(world.admin.principal),
        mode="hybrid",
        query="coffee tea",
        top_k=5,
    )

    # when: a hybrid search runs, the keyword leg (the only statement that reads the search
    # vector) releasing the embedder when it reaches the server
    with connection.execute_wrapper(releasing_on("search_vector", released)):
        hits = fact_search(search=asked)

    # then: the embedder did not wait out its timeout (the leg ran while it embedded), and the
    # hits are those of the same search with the vector given up front
    assert embedder.calls == 1
    assert not embedder.waited_out
    [vector] = HASHING.embed(["coffee tea"])
    alone = fact_search_embedded(search=asked, vector=vector, model=HASHING.model)
    assert [(h.revision.pk, h.ranks) for h in hits] == [(h.revision.pk, h.ranks) for h in alone]
    assert len(hits) == 5
    assert all(h.revision.subjects.all() is not None for h in hits)


def test_an_embedder_failing_during_the_keyword_leg_fails_the_search_loudly(
    world, monkeypatch
) -> None:
    # given: an embedder that fails, and facts the keyword leg finds
    from api.errors import EmbeddingUnavailable

    plant(world.tenant, ["coffee order"])

    def failing(text: str) -> Any:
        raise EmbeddingUnavailable("The embedder did not answer; try again later.")

    monkeypatch.setattr(fact_search_module, "embed_query", failing)
    asked = FactSearch(
        tenant_id=world.tenant.id,
        readers=readers_for(world.admin.principal),
        mode="hybrid",
        query="coffee",
    )

    # when / then: the search fails with the embedder's error, not the keyword leg's hits
    with pytest.raises(EmbeddingUnavailable):
        fact_search(search=asked)


def test_a_write_reads_while_its_content_is_embedded_and_stores_the_vector(
    world, monkeypatch, settings
) -> None:
    # given: an embedder that answers at once, and a write's first read (the project of its
    # scope) that goes to the server only once the embedding has started
    settings.EMBED_BUDGET_MS = 10_000
    released = threading.Event()
    released.set()
    embedder = WaitingEmbedder(released)
    monkeypatch.setattr("embeddings.budget.get_embedder", lambda: embedder)
    read_waited_out: list[bool] = []

    def after_embedding_started(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if '"kindmem_project"' in sql and not read_waited_out:
            read_waited_out.append(not embedder.started.wait(WAIT_SECONDS))
        return execute(sql, params, many, ctx)

    # when: an app writes a fact
    with connection.execute_wrapper(after_embedding_started):
        revision = services.fact_create(
            principal=world.app.principal,
            type="note",
            content="prefers window seats",
            scope={"project_id": str(world.project.id), "participant_id": "u-1"},
        ).revision

    # then: the embedding was under way before the write read anything (the read did not wait
    # out its timeout), once, and the revision holds its vector
    assert read_waited_out == [False]
    assert embedder.calls == 1
    revision.refresh_from_db()
    assert revision.embedding_state == EmbeddingState.DONE
    [expected] = HASHING.embed(["prefers window seats"])
    assert list(revision.embedding) == pytest.approx(expected, abs=1e-6)
