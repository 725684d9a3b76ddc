"""The embedding providers: the real local model, the OpenAI-compatible client against a real
HTTP server, the deterministic stand-in, the chooser and the health report."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from embeddings import local, local_onnx
from embeddings.openai_compatible import OpenAICompatibleEmbedder, embeddings_url
from embeddings.providers import (
    DIMENSIONS,
    EmbeddingFailed,
    HashingEmbedder,
    embed_query,
    get_embedder,
    require_embedder,
)
from embeddings.query_cache import QueryCache
from kindmem.errors import EmbeddingUnavailable
from tests.facts.conftest import Reply, vector_for


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(v * v for v in vector))


def client_for(server, **options) -> OpenAICompatibleEmbedder:
    defaults = {"model": "test-embed", "timeout_seconds": 2.0, "retries": 2, "backoff_seconds": 0}
    return OpenAICompatibleEmbedder(base_url=server.url, **{**defaults, **options})


# The real local model -------------------------------------------------------------------------


def test_local_model_loads_from_the_package_without_touching_the_network(monkeypatch):
    # given: any attempt to open a network connection fails the test
    real_connect = socket.socket.connect

    def no_network(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"the local model tried to reach {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", no_network)
    # when: the model is loaded from scratch (not the process's cached one)
    model = local.load_model()
    # then: it is all-MiniLM-L6-v2's 384-wide model, read from the package's folder
    assert model.get_embedding_dimension() == DIMENSIONS
    assert (local.model_path() / "model.safetensors").is_file()


def test_local_model_embeds_with_real_semantics():
    # given
    embedder = local.LocalEmbedder()
    # when
    cat, kitten, tax = embedder.embed(
        ["the cat sits on the mat", "a kitten is sitting on a rug", "quarterly tax filing deadline"]
    )
    # then: 384 unit vectors, and the kitten is nearer the cat than the tax deadline is
    assert embedder.model == "sentence-transformers/all-MiniLM-L6-v2"
    for vector in (cat, kitten, tax):
        assert len(vector) == DIMENSIONS
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert cosine(cat, kitten) > 0.5
    assert cosine(cat, tax) < 0.2
    assert cosine(cat, kitten) > cosine(cat, tax) + 0.3


def test_local_model_is_loaded_once_per_process_and_answers_the_same_each_time():
    # given: two embedders (e.g. after settings changed)
    first, second = local.LocalEmbedder(), local.LocalEmbedder()
    # when
    a = first.embed(["I prefer tea to coffee"])
    b = second.embed(["I prefer tea to coffee"])
    # then: one shared model, the same vector
    assert local.loaded_model() is local.loaded_model()
    assert first.loaded
    assert second.loaded
    assert a[0] == pytest.approx(b[0], abs=1e-6)


def test_local_model_embeds_a_batch_in_order_and_an_empty_batch_to_nothing():
    embedder = local.LocalEmbedder()
    texts = [f"note number {i} about the quarterly report" for i in range(20)] + [""]
    batch = embedder.embed(texts)
    singles = [embedder.embed([text])[0] for text in (texts[3], texts[-1])]
    assert len(batch) == len(texts)
    assert batch[3] == pytest.approx(singles[0], abs=1e-4)
    assert batch[-1] == pytest.approx(singles[1], abs=1e-4)
    assert embedder.embed([]) == []


# The same model on ONNX Runtime ---------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
# Beside short ones: empty, accents and emoji, and one past the model's 256 tokens (truncated
# alike by both runtimes).
PROBE_TEXTS = [
    "the cat sits on the mat",
    "When did Kwame paint his old canoe?",
    "",
    "Zoë's café in Montréal serves crème brûlée 🍮",
    "I signed up for a pottery class at the community centre. " * 40,
]


def _no_network(monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    real_connect = socket.socket.connect

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"{what} tried to reach {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache made from scratch for this module: both variants converted from the packaged
    weights, with the network unreachable and the hub offline."""
    folder = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _no_network(monkeypatch, "the ONNX conversion")
        for variant in local_onnx.VARIANTS:
            local_onnx.ensure_converted(folder, variant)
    return folder


@pytest.mark.slow
def test_onnx_conversion_is_made_offline_from_the_packaged_weights_and_kept(onnx_cache):
    # given: the module's cache, converted with the network unreachable (the fixture)
    key = local_onnx.weights_key(local.model_path())
    # then: one file per variant, named by the weights' hash, and asking again converts nothing
    assert sorted(p.name for p in onnx_cache.glob("*.onnx")) == [
        f"all-MiniLM-L6-v2-{key}.int8.onnx",
        f"all-MiniLM-L6-v2-{key}.onnx",
    ]
    before = {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")}
    for variant in local_onnx.VARIANTS:
        local_onnx.ensure_converted(onnx_cache, variant)
    assert {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")} == before
    assert not list(onnx_cache.glob("*.partial"))


def test_the_cache_key_changes_with_the_converter(monkeypatch):
    key = local_onnx.weights_key(local.model_path())
    monkeypatch.setattr(local_onnx, "CONVERTER_VERSION", local_onnx.CONVERTER_VERSION + 1)
    assert local_onnx.weights_key(local.model_path()) != key


@pytest.mark.slow
def test_onnx_vectors_equal_torchs_within_tolerance(onnx_cache, monkeypatch):
    # given: torch's vectors for the probe texts
    torch_vectors = local.LocalEmbedder().embed(PROBE_TEXTS)
    _no_network(monkeypatch, "the ONNX embedder")
    # int8 quantises activations per batch (one scale for the whole tensor), so a text's
    # vector moves a little with its batch companions; float32's does not.
    for variant, floor, alone in (
        (local_onnx.FLOAT, 0.9999, 0.9999),
        (local_onnx.INT8, 0.95, 0.95),
    ):
        # when: the same texts on ONNX Runtime, as a batch and one by one
        embedder = local_onnx.OnnxEmbedder(cache_dir=onnx_cache, variant=variant)
        batch = embedder.embed(PROBE_TEXTS)
        singles = [embedder.embed([text])[0] for text in PROBE_TEXTS]
        # then: unit vectors in order, near torch's (the float file reproduces them; int8 is
        # measured in bench/query_embedding.py), about the same alone as in a batch
        for vectors in (batch, singles):
            similarities = [cosine(a, b) for a, b in zip(vectors, torch_vectors, strict=True)]
            assert min(similarities) >= floor, (variant, similarities)
        together = [cosine(a, b) for a, b in zip(batch, singles, strict=True)]
        assert min(together) >= alone, (variant, together)
        assert all(norm(v) == pytest.approx(1.0, abs=1e-5) for v in batch)
    assert embedder.embed([]) == []


@pytest.mark.slow
def test_onnx_embedder_reads_the_cache_without_torch_or_the_network(onnx_cache):
    # when: a fresh process, the hub offline, embeds from the cached file
    script = (
        "import sys; from pathlib import Path; from embeddings.local_onnx import OnnxEmbedder;"
        f" [v] = OnnxEmbedder(cache_dir=Path({str(onnx_cache)!r})).embed(['hello']);"
        " print(len(v), 'torch' in sys.modules, 'transformers' in sys.modules)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    # then: it embeds, and never imported torch nor transformers
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(DIMENSIONS), "False", "False"]


@pytest.mark.slow
def test_kindmem_run_converts_before_starting_and_finds_a_converted_file_done(onnx_cache, settings):
    # given: the module's converted cache (a first run would convert here, before any child)
    from config.management.commands.run import Command

    settings.MODEL_CACHE_DIR = onnx_cache
    settings.LOCAL_RUNTIME = "onnx"
    before = {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")}
    # when
    Command()._convert_local_model()
    # then: nothing converted again, and the module's command line says so by silence
    assert {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")} == before
    done = subprocess.run(
        [sys.executable, "-m", "embeddings.local_onnx", str(onnx_cache), "onnx-int8"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_onnx_float_shares_the_models_name_and_int8_names_its_own(tmp_path):
    float32 = local_onnx.OnnxEmbedder(cache_dir=tmp_path)
    int8 = local_onnx.OnnxEmbedder(cache_dir=tmp_path, variant=local_onnx.INT8)
    assert float32.model == local.LocalEmbedder.model == local.MODEL_NAME
    assert int8.model == f"{local.MODEL_NAME}:int8"
    assert (float32.runtime, int8.runtime, local.LocalEmbedder().runtime) == (
        "onnx",
        "onnx-int8",
        "torch",
    )


def test_a_broken_onnx_file_fails_as_embedding_failed(tmp_path, monkeypatch):
    # given: a cache whose file for these weights is garbage
    target = local_onnx.cached_file(tmp_path, local.model_path(), local_onnx.FLOAT)
    target.write_bytes(b"not a model")
    # when / then
    with pytest.raises(EmbeddingFailed, match="ONNX"):
        local_onnx.OnnxEmbedder(cache_dir=tmp_path).embed(["hello"])


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


# The OpenAI-compatible client against a real server -------------------------------------------


def test_openai_embedder_returns_unit_vectors_in_input_order(embeddings_server):
    # given: a server that lists its items in reverse order
    texts = ["first text", "second, longer text", "third"]
    # when
    vectors = client_for(embeddings_server).embed(texts)
    # then: each vector is its own text's, scaled to unit length
    assert len(vectors) == 3
    for text, vector in zip(texts, vectors, strict=True):
        expected = vector_for(text)
        assert vector == pytest.approx([v / norm(expected) for v in expected])
    assert len(embeddings_server.requests) == 1


def test_openai_embedder_posts_model_and_input_with_the_bearer_key(embeddings_server):
    client_for(embeddings_server, api_key="sk-test-123").embed(["hello"])
    request = embeddings_server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer sk-test-123"
    assert request["json"] == {"model": "test-embed", "input": ["hello"]}


def test_openai_embedder_asks_for_the_column_width_only_when_configured(embeddings_server):
    client_for(embeddings_server, send_dimensions=True).embed(["hello"])
    client_for(embeddings_server).embed(["hello"])
    assert embeddings_server.requests[0]["json"]["dimensions"] == DIMENSIONS
    assert "dimensions" not in embeddings_server.requests[1]["json"]
    assert "Authorization" not in embeddings_server.requests[1]["headers"]


@pytest.mark.parametrize("base", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"])
def test_embeddings_url_accepts_a_base_with_or_without_v1(base):
    assert embeddings_url(base) == "http://h:1/v1/embeddings"


def test_openai_embedder_splits_large_inputs_into_batches_and_keeps_order(embeddings_server):
    texts = [f"text {i}" for i in range(300)]
    vectors = client_for(embeddings_server).embed(texts)
    assert [len(r["json"]["input"]) for r in embeddings_server.requests] == [128, 128, 44]
    assert vectors[299] == pytest.approx(
        [v / norm(vector_for("text 299")) for v in vector_for("text 299")]
    )


def test_openai_embedder_retries_after_a_500_then_succeeds(embeddings_server):
    # given: the server fails once, then recovers
    embeddings_server.script = [Reply(500, {"error": {"message": "overloaded"}})]
    # when
    vectors = client_for(embeddings_server).embed(["hello"])
    # then
    assert len(vectors) == 1
    assert len(embeddings_server.requests) == 2


def test_openai_embedder_gives_up_after_its_bounded_retries(embeddings_server):
    embeddings_server.script = [Reply(503, {"error": {"message": "try later"}})] * 5
    with pytest.raises(EmbeddingFailed, match=r"after 3 attempt\(s\): HTTP 503: try later"):
        client_for(embeddings_server, retries=2).embed(["hello"])
    assert len(embeddings_server.requests) == 3


def test_openai_embedder_does_not_retry_a_refusal_nor_reveal_the_key(embeddings_server):
    embeddings_server.script = [Reply(401, {"error": {"message": "Incorrect API key"}})]
    with pytest.raises(EmbeddingFailed, match="refused the request: HTTP 401") as failure:
        client_for(embeddings_server, api_key="sk-secret").embed(["hello"])
    assert "sk-secret" not in str(failure.value)
    assert len(embeddings_server.requests) == 1


def test_openai_embedder_times_out_into_embedding_failed(embeddings_server):
    # given: a server slower than the client's timeout, every time
    embeddings_server.script = [Reply(delay_seconds=1.5)] * 2
    started = time.monotonic()
    # when / then
    with pytest.raises(EmbeddingFailed, match=r"after 2 attempt\(s\): no answer within 0.2 s"):
        client_for(embeddings_server, timeout_seconds=0.2, retries=1).embed(["hello"])
    assert time.monotonic() - started < 1.5
    assert len(embeddings_server.requests) == 2


def test_openai_embedder_reports_an_unreachable_server():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAICompatibleEmbedder(
        base_url=f"http://127.0.0.1:{port}", model="m", retries=1, backoff_seconds=0
    )
    with pytest.raises(EmbeddingFailed, match="cannot connect"):
        embedder.embed(["hello"])


def test_openai_embedder_retries_an_answer_cut_off_midway(embeddings_server):
    # given: a server that promises more bytes than it sends, once
    embeddings_server.script = [Reply(body={"data": []}, truncate=True)]
    # when
    vectors = client_for(embeddings_server).embed(["hello"])
    # then
    assert len(vectors) == 1
    assert len(embeddings_server.requests) == 2


def test_openai_embedder_rejects_vectors_of_the_wrong_width(embeddings_server):
    embeddings_server.script = [
        Reply(body={"data": [{"index": 0, "embedding": vector_for("x", 1536)}]})
    ]
    with pytest.raises(EmbeddingFailed, match="vectors of 1536 dimensions; kindmem stores 384"):
        client_for(embeddings_server).embed(["hello"])


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"object": "list"}, "no `data` list"),
        ({"data": []}, "0 embeddings for 2 inputs"),
        ({"data": [{"index": 0, "embedding": [1.0] * 384}] * 2}, "repeated or out-of-range"),
        ({"data": [{"index": 0, "embedding": [1.0] * 384}, {"index": 5}]}, "out-of-range"),
        ({"data": [{"index": 0}, {"index": 1}]}, "no `embedding` list"),
        ({"data": [{"index": i, "embedding": ["a"] * 384} for i in range(2)]}, "finite number"),
        ({"data": [{"index": i, "embedding": [0.0] * 384} for i in range(2)]}, "all zeros"),
        ([1, 2], "no `data` list"),
    ],
)
def test_openai_embedder_rejects_a_malformed_payload(embeddings_server, body, why):
    embeddings_server.script = [Reply(body=body)]
    with pytest.raises(EmbeddingFailed, match="malformed JSON") as failure:
        client_for(embeddings_server).embed(["a", "b"])
    assert why in str(failure.value)
    assert len(embeddings_server.requests) == 1


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
    body = client.get("/healthz").json()
    assert body["checks"]["embedder"] == {
        "provider": "openai",
        "model": "test-embed",
        "dimensions": DIMENSIONS,
        "ok": True,
    }
    assert embeddings_server.requests[0]["json"]["input"] == ["kindmem health probe"]


def test_healthz_stays_200_when_only_the_embedder_fails(client, db, settings, embeddings_server):
    # given: an embedder that answers 500 to everything
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_URL = embeddings_server.url
    settings.EMBEDDER_MODEL = "test-embed"
    embeddings_server.script = [Reply(500, {"error": "boom"})] * 3
    # when
    response = client.get("/healthz")
    # then: reported, without retries, and not fatal
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["checks"]["embedder"]["ok"] is False
    assert "HTTP 500: boom" in body["checks"]["embedder"]["error"]
    assert len(embeddings_server.requests) == 1
