"""The embedding providers: the query cache, the deterministic stand-in, the chooser
and the health report."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.errors import EmbeddingUnavailable
from config.tasks import probe_dependencies
from embeddings import local, local_onnx
from embeddings.openai_compatible import OpenAICompatibleEmbedder
from embeddings.providers import (
    DIMENSIONS,
    EmbeddingFailed,
    HashingEmbedder,
    embed_query,
    get_embedder,
    require_embedder,
)
from embeddings.query_cache import QueryCache
from tests.facts.conftest import Reply, cosine, norm

# Slow, as when these tests were part of test_embedding.py (a module that starts processes is
# marked slow whole, tests/conftest.py); left as they were by the split.
pytestmark = pytest.mark.slow


# The query cache ------------------------------------------------------------------------------


def test_query_cache_keeps_the_most_recently_used_entries_up_to_its_bound():
    cache = QueryCache(2)
    cache.put("a", [1.0])
    cache.put("b", [2.0])
    assert cache.get("a") == [1.0]  # a is now the most recent
    cache.put("c", [3.0])  # evicts b, the least recently used
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, [1.0], [3.0])
    assert len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_query_cache_hands_out_copies_and_keeps_exact_values():
    cache = QueryCache(4)
    vector = [0.1, -0.2, 1 / 3]
    cache.put("q", vector)
    first = cache.get("q")
    first[0] = 99.0
    assert cache.get("q") == vector


def test_query_cache_of_size_zero_keeps_nothing():
    cache = QueryCache(0)
    cache.put("q", [1.0])
    assert cache.get("q") is None
    assert len(cache) == 0


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail = False

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail:
            raise EmbeddingFailed("down")
        return super().embed(texts)


@pytest.fixture
def counting(monkeypatch, settings) -> CountingEmbedder:
    embedder = CountingEmbedder()
    monkeypatch.setattr("embeddings.providers.require_embedder", lambda: embedder)
    settings.QUERY_CACHE_SIZE = 8
    return embedder


def test_a_repeated_query_is_embedded_once(counting):
    first = embed_query("what does Ana drink?")
    second = embed_query("what does Ana drink?")
    other = embed_query("what does Ana eat?")
    assert first == second
    assert first[1] == HashingEmbedder.model
    assert other != first
    assert counting.calls == [["what does Ana drink?"], ["what does Ana eat?"]]


def test_a_failed_query_embedding_is_not_cached(counting):
    counting.fail = True
    with pytest.raises(EmbeddingUnavailable):
        embed_query("what does Ana drink?")
    counting.fail = False
    vector, _ = embed_query("what does Ana drink?")
    assert len(vector) == DIMENSIONS
    assert len(counting.calls) == 2


def test_the_query_cache_is_keyed_by_model(counting, monkeypatch):
    embed_query("tea")
    monkeypatch.setattr(counting, "model", "another-model", raising=False)
    embed_query("tea")
    assert len(counting.calls) == 2


# The deterministic stand-in -------------------------------------------------------------------


def test_hashing_embedder_is_deterministic_and_unit_length():
    embedder = HashingEmbedder()
    first = embedder.embed(["Alice prefers window seats", ""])
    again = HashingEmbedder().embed(["Alice prefers window seats", ""])
    assert first == again
    assert all(len(v) == DIMENSIONS and norm(v) == pytest.approx(1.0) for v in first)


def test_hashing_embedder_puts_texts_sharing_words_nearer():
    near, same_words, unrelated = HashingEmbedder().embed(
        ["alice likes green tea", "green tea alice likes", "quarterly tax filing deadline"]
    )
    assert cosine(near, same_words) == pytest.approx(1.0)
    assert cosine(near, unrelated) < 0.5


# Choosing the provider from settings ----------------------------------------------------------


def test_no_embedder_configured_means_none_and_require_fails_loudly(settings):
    settings.EMBEDDER = "none"
    assert get_embedder() is None
    with pytest.raises(EmbeddingUnavailable):
        require_embedder()


def test_the_chooser_builds_each_configured_provider(settings, embeddings_server):
    settings.EMBEDDER = "hashing"
    assert isinstance(require_embedder(), HashingEmbedder)
    settings.EMBEDDER = "local"
    settings.EMBEDDER_THREADS = 1
    settings.LOCAL_RUNTIME = "torch"
    local_embedder = require_embedder()
    assert isinstance(local_embedder, local.LocalEmbedder)
    assert local_embedder.threads == 1
    for runtime in local_onnx.VARIANTS:
        settings.LOCAL_RUNTIME = runtime
        onnx_embedder = require_embedder()
        assert isinstance(onnx_embedder, local_onnx.OnnxEmbedder)
        assert (onnx_embedder.runtime, onnx_embedder.threads) == (runtime, 1)
        assert onnx_embedder.cache_dir == Path(settings.MODEL_CACHE_DIR)
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "text-embedding-3-small"
    settings.EMBEDDER_API_KEY = "sk-from-settings"
    settings.EMBEDDER_TIMEOUT_SECONDS = 3
    settings.EMBEDDER_RETRIES = 4
    embedder = require_embedder()
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert (embedder.model, embedder.timeout_seconds, embedder.retries) == (
        "text-embedding-3-small",
        3,
        4,
    )
    assert len(embedder.embed(["hello"])[0]) == DIMENSIONS
    assert embeddings_server.requests[0]["headers"]["Authorization"] == "Bearer sk-from-settings"
    assert get_embedder() is embedder  # built once per configuration


def test_openai_without_a_url_is_a_clear_embedding_unavailable(settings):
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = ""
    settings.EMBEDDER_MODEL = "m"
    with pytest.raises(EmbeddingUnavailable, match="needs KINDMEM_EMBEDDER_URL"):
        get_embedder()


# /healthz -------------------------------------------------------------------------------------


def test_healthz_reports_no_embedder_as_ok(client, db, settings):
    settings.EMBEDDER = "none"
    body = client.get("/healthz").json()
    assert body["checks"]["embedder"] == {
        "provider": "none",
        "ok": True,
        "model": None,
        "dimensions": None,
    }


@pytest.mark.parametrize("runtime", ["onnx", "onnx-int8", "torch"])
def test_healthz_reports_the_local_model_its_runtime_and_whether_it_is_loaded(
    client, db, settings, runtime
):
    settings.EMBEDDER = "local"
    settings.LOCAL_RUNTIME = runtime
    embedder = client.get("/healthz").json()["checks"]["embedder"]
    assert embedder["ok"] is True
    assert embedder["runtime"] == runtime
    assert embedder["model"] == require_embedder().model
    assert embedder["model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert embedder["dimensions"] == DIMENSIONS
    assert embedder["loaded"] == require_embedder().loaded


def test_healthz_probes_the_openai_embedder(client, db, settings, embeddings_server):
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "test-embed"
    # the worker probes it (config/tasks.py); /healthz says what it found, calling nothing
    probe_dependencies()
    body = client.get("/healthz").json()
    assert body["checks"]["embedder"] == {
        "provider": "openai",
        "model": "test-embed",
        "dimensions": DIMENSIONS,
        "ok": True,
    }
    assert [r["json"]["input"] for r in embeddings_server.requests] == [["kindmem health probe"]]


def test_healthz_stays_200_when_only_the_embedder_fails(client, db, settings, embeddings_server):
    # given: an embedder that answers 500 to everything
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "test-embed"
    embeddings_server.script = [Reply(500, {"error": "boom"})] * 3
    # when the worker probes it
    probe_dependencies()
    response = client.get("/healthz")
    # then: reported, without retries, and not fatal
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["checks"]["embedder"]["ok"] is False
    assert "HTTP 500: boom" in body["checks"]["embedder"]["error"]
    assert len(embeddings_server.requests) == 1
