"""Corpus vectors for bench/search.py: embedded once with the local model (all-MiniLM-L6-v2)
and cached under the data folder (var/bench/search/), never in git. Resumable: chunks of
10,000 vectors are saved as they finish, so an interrupted run continues where it stopped.

    .venv/bin/python bench/search_vectors.py --facts 100000 --seed 7
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

CHUNK = 10_000
BATCH = 256


def cache_dir() -> Path:
    import django

    django.setup()
    from django.conf import settings

    folder = Path(settings.DATA_DIR) / "bench" / "search"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def vectors_path(n: int, seed: int) -> Path:
    return cache_dir() / f"corpus-{n}-seed{seed}-all-MiniLM-L6-v2.npy"


def corpus_vectors(texts: list[str], seed: int, *, threads: int = 1) -> tuple[np.ndarray, dict]:
    """The corpus's vectors (float32, unit length), from the cache or embedded now.

    Each distinct text is embedded once (the templated corpus repeats: 1M facts hold 541k
    distinct texts), on the runtime `KINDMEM_LOCAL_RUNTIME` names (ONNX float32 by default,
    whose vectors equal torch's to float rounding: bench/README "query_embedding.py").
    """
    final = vectors_path(len(texts), seed)
    if final.exists():
        return np.load(final), {"cached": True}
    from django.conf import settings

    from embeddings.providers import get_embedder

    distinct = list(dict.fromkeys(texts))
    settings.EMBEDDER, settings.EMBEDDER_THREADS = "local", threads
    embedder = get_embedder()
    assert embedder is not None
    embedder.embed(["warm up"])
    chunks = []
    embedded = 0
    started = time.monotonic()
    stem = final.stem + f".distinct{len(distinct)}"
    for start in range(0, len(distinct), CHUNK):
        part = final.with_name(f"{stem}.part{start // CHUNK:04d}.npy")
        if part.exists():
            chunks.append(np.load(part))
            continue
        block = distinct[start : start + CHUNK]
        out = []
        for b in range(0, len(block), BATCH):
            out.extend(embedder.embed(block[b : b + BATCH]))
        array = np.asarray(out, dtype=np.float32)
        np.save(part, array)
        chunks.append(array)
        embedded += len(block)
        rate = embedded / (time.monotonic() - started)
        print(f"  embedded {start + len(block)}/{len(distinct)} ({rate:.0f} texts/s)", flush=True)
    by_text = np.concatenate(chunks)
    position = {text: i for i, text in enumerate(distinct)}
    vectors = by_text[[position[text] for text in texts]]
    np.save(final, vectors)
    for part in final.parent.glob(stem + ".part*.npy"):
        part.unlink()
    seconds = time.monotonic() - started
    return vectors, {
        "cached": False,
        "distinct_texts": len(distinct),
        "runtime": getattr(embedder, "runtime", None),
        "texts_embedded_now": embedded,
        "seconds": round(seconds, 1),
        "texts_per_second": round(embedded / seconds, 1) if embedded else None,
    }


def main() -> None:
    from bench.search_corpus import generate

    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    rows = generate(args.facts, args.seed)
    vectors, info = corpus_vectors([r.text for r in rows], args.seed, threads=args.threads)
    print(vectors.shape, info)


if __name__ == "__main__":
    main()
