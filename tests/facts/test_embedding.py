"""The embedding providers: the real local model, on torch and on ONNX Runtime.
The OpenAI-compatible client is in test_embedding_openai.py; the query cache, the
deterministic stand-in, the chooser and the health report in test_embedding_choice.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from packaging.utils import canonicalize_name

from embeddings import local, local_onnx
from embeddings.providers import DIMENSIONS, EmbeddingFailed
from tests.facts.conftest import cosine, norm
from tests.facts.minilm_texts import TEXTS
from tests.test_lock import locked

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


# A fresh process converts as `kindmem run` does, where torch, transformers and
# sentence-transformers cannot be imported (the runtime's environment has none of them) and no
# connection can be opened; it reports the distributions it imported, by name.
CONVERT_WITHOUT_TORCH = """
import json, socket, sys
from importlib import metadata
from pathlib import Path

sys.modules.update(torch=None, transformers=None, sentence_transformers=None)


def no_network(sock, address):
    raise OSError(f"the ONNX conversion tried to reach {address}")


socket.socket.connect = no_network
from embeddings import local_onnx

folder = Path(sys.argv[1])
for variant in local_onnx.VARIANTS:
    local_onnx.ensure_converted(folder, variant)
    local_onnx.OnnxEmbedder(cache_dir=folder, variant=variant).embed(["hello"])
owners = metadata.packages_distributions()
top = {name.partition(".")[0] for name, module in sys.modules.items() if module is not None}
print(json.dumps(sorted({d for name in top for d in owners.get(name, [])})))
"""


@dataclass(frozen=True)
class Converted:
    folder: Path
    imported: list[str]  # the distributions the converting process imported


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Converted:
    """A cache made from scratch for this module: both variants converted from the packaged
    weights, without torch and with the network unreachable."""
    folder = tmp_path_factory.mktemp("models")
    done = subprocess.run(
        [sys.executable, "-c", CONVERT_WITHOUT_TORCH, str(folder)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return Converted(folder, json.loads(done.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def onnx_cache(converted: Converted) -> Path:
    return converted.folder


@pytest.mark.slow
def test_onnx_conversion_is_made_offline_without_torch_and_kept(onnx_cache):
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
def test_onnx_vectors_equal_sentence_transformers_on_sixty_varied_texts(onnx_cache):
    # given: sentence-transformers' vectors (torch) for the fixed set of varied texts
    assert len(TEXTS) >= 50
    torch_vectors = local.LocalEmbedder().embed(TEXTS)
    # when: the float32 ONNX model embeds them, in one call as a user's batch would
    onnx_vectors = local_onnx.OnnxEmbedder(cache_dir=onnx_cache).embed(TEXTS)
    # then: every text's vector is the one stored vectors were made with
    similarities = [cosine(a, b) for a, b in zip(onnx_vectors, torch_vectors, strict=True)]
    worst = min(range(len(TEXTS)), key=similarities.__getitem__)
    assert similarities[worst] >= 0.9999, (TEXTS[worst][:60], similarities[worst])


@pytest.mark.slow
def test_the_conversion_imports_only_what_the_run_lock_installs(converted):
    # given: what `make run` installs (requirements/run.lock)
    run_lock = locked(ROOT / "requirements/run.lock")
    # then: the converting and embedding process imported nothing else (kindmem is the checkout)
    imported = {canonicalize_name(name) for name in converted.imported} - {"kindmem"}
    assert imported, "the process reported no distributions"
    assert imported - run_lock.keys() == set()
    assert {"torch", "transformers", "sentence-transformers"}.isdisjoint(run_lock)


def test_the_reference_vectors_are_sentence_transformers_vectors_today():
    # given: the vectors a built ONNX file is checked against (embeddings/minilm_reference.json)
    texts, reference = local_onnx.reference_vectors()
    # when: torch embeds the same texts now
    vectors = local.LocalEmbedder().embed(texts)
    # then: they are the same, to the file's eight digits
    assert len(texts) >= 5
    assert abs(reference - vectors).max() < 1e-6


@pytest.mark.slow
def test_a_built_model_unlike_the_reference_vectors_is_refused(tmp_path, monkeypatch):
    # given: reference vectors that are not the packaged model's (each one moved to the next text)
    texts, reference = local_onnx.reference_vectors()
    wrong = tmp_path / "reference.json"
    wrong.write_text(json.dumps({"texts": texts, "vectors": np.roll(reference, 1, 0).tolist()}))
    monkeypatch.setattr(local_onnx, "REFERENCE_FILE", wrong)
    cache = tmp_path / "models"
    # when / then: the build fails loudly and leaves no file that a later load would read
    with pytest.raises(EmbeddingFailed, match="reference vectors"):
        local_onnx.ensure_converted(cache, local_onnx.FLOAT)
    assert [p.name for p in cache.iterdir()] == [".convert.lock"]


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
