"""The embedding providers: the OpenAI-compatible client against a real HTTP server."""

from __future__ import annotations

import socket
import time

import pytest

from embeddings.openai_compatible import OpenAICompatibleEmbedder, embeddings_url
from embeddings.providers import DIMENSIONS, EmbeddingFailed
from tests.facts.conftest import Reply, norm, vector_for

# Slow, as when these tests were part of test_embedding.py (a module that starts processes is
# marked slow whole, tests/conftest.py); left as they were by the split.
pytestmark = pytest.mark.slow


def client_for(server, **options) -> OpenAICompatibleEmbedder:
    defaults = {"model": "test-embed", "timeout_seconds": 2.0, "retries": 2, "backoff_seconds": 0}
    return OpenAICompatibleEmbedder(base_url=server.url, **{**defaults, **options})


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
