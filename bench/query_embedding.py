"""Query embedding: the local model on torch against ONNX Runtime (float32 and int8), for cost
and for fidelity.

    .venv/bin/python bench/query_embedding.py                     # seed 1, 600 queries x 3 rounds
    .venv/bin/python bench/query_embedding.py --seed 2 --rounds 5

Cost: every development-set question (bench/devset.py) embedded alone, as search embeds a
query (`embedder.embed([text])`, what `embed_query` calls on a cache miss), by each runtime in
turn, the order shuffled per question so that the machine's noise falls on all alike; p50 /
p95 / p99 per runtime, the ratio of p50s and the median of the per-question ratios. Beside it
the throughput of a batch write (64 texts a call) and what a query-cache hit costs.

Fidelity: cosine between each runtime's vectors and torch's, and recall@10 of dense search
with the runtime's query vectors against torch's (the top 10 of each question's person's facts
and turns by exact cosine, as bench/retrieval_quality.py's plain dense; overlap of the two top
10s). Two cases: queries only (the stored vectors stay torch's: what `onnx` does, sharing the
model name) and queries and documents (the corpus re-embedded by the runtime: what `onnx-int8`
needs, under its own model name).

One thread per runtime (KINDMEM_EMBEDDER_THREADS, 1 by default). Torch's document vectors are
cached under var/bench/quality/ (shared with retrieval_quality.py). Writes
bench/results/query-embedding-seed<seed>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may download: weights come from the package

import django

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from bench.devset import generate  # noqa: E402
from embeddings.local import LocalEmbedder  # noqa: E402
from embeddings.local_onnx import FLOAT, INT8, OnnxEmbedder  # noqa: E402
from embeddings.query_cache import QueryCache  # noqa: E402

ROOT = Path(__file__).resolve().parent
K = 10
RUNTIMES = ("torch", FLOAT, INT8)


def embedders(threads: int) -> dict:
    cache_dir = Path(settings.MODEL_CACHE_DIR)
    return {
        "torch": LocalEmbedder(threads=threads),
        FLOAT: OnnxEmbedder(cache_dir=cache_dir, variant=FLOAT, threads=threads),
        INT8: OnnxEmbedder(cache_dir=cache_dir, variant=INT8, threads=threads),
    }


def embed_all(embedder, texts: list[str], path: Path | None = None) -> np.ndarray:
    if path is not None and path.exists():
        return np.load(path)
    out: list[list[float]] = []
    for start in range(0, len(texts), 256):
        out.extend(embedder.embed(texts[start : start + 256]))
    vectors = np.asarray(out, dtype=np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {f"p{p}": round(float(np.percentile(ms, p)), 2) for p in (50, 95, 99)}


def latency(embed: dict, queries: list[str], rounds: int, rng: random.Random) -> dict:
    """Single-query calls, each question by every runtime in a shuffled order, `rounds` times."""
    for e in embed.values():  # load and warm: the first calls allocate
        for q in queries[:20]:
            e.embed([q])
    samples: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for q in queries:
            order = list(embed)
            rng.shuffle(order)
            for name in order:
                started = time.perf_counter()
                embed[name].embed([q])
                samples[name].append(time.perf_counter() - started)
    torch_p50 = statistics.median(samples["torch"])
    out = {}
    for name, s in samples.items():
        paired = [a / b for a, b in zip(s, samples["torch"], strict=True)]
        out[name] = {
            **percentiles(s),
            "calls": len(s),
            "p50 / torch p50": round(statistics.median(s) / torch_p50, 3),
            "median per-query ratio": round(statistics.median(paired), 3),
        }
    return out


def batch_throughput(embed: dict, texts: list[str], rounds: int) -> dict:
    """Texts per second embedding 64 at a time (the write path's batches), rounds interleaved."""
    block = texts[:256]
    seconds: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for name, e in embed.items():
            started = time.perf_counter()
            for start in range(0, len(block), 64):
                e.embed(block[start : start + 64])
            seconds[name].append(time.perf_counter() - started)
    return {name: round(len(block) / statistics.median(s), 1) for name, s in seconds.items()}


def cache_hit_cost(vector: list[float]) -> float:
    cache = QueryCache(1024)
    cache.put(("m", "r", "q"), vector)
    started = time.perf_counter()
    for _ in range(10_000):
        cache.get(("m", "r", "q"))
    return round((time.perf_counter() - started) / 10_000 * 1e6, 2)


def top_k(doc_vectors: np.ndarray, idx: list[int], query: np.ndarray) -> list[int]:
    sims = doc_vectors[idx] @ query
    return [idx[i] for i in np.argsort(-sims, kind="stable")[:K]]


def recall_vs_torch(
    people: list[str],
    corpora: dict[str, tuple[list[str], dict[str, np.ndarray]]],
    queries: dict[str, np.ndarray],
    runtime: str,
    with_documents: bool,
) -> dict[str, float]:
    """Mean overlap of the top 10 by the runtime's vectors with the top 10 by torch's."""
    out = {}
    for corpus, (owners, vectors) in corpora.items():
        by_person: dict[str, list[int]] = defaultdict(list)
        for i, owner in enumerate(owners):
            by_person[owner].append(i)
        docs = vectors[runtime] if with_documents else vectors["torch"]
        overlaps = []
        for qi, person in enumerate(people):
            idx = by_person[person]
            expected = set(top_k(vectors["torch"], idx, queries["torch"][qi]))
            got = set(top_k(docs, idx, queries[runtime][qi]))
            overlaps.append(len(expected & got) / len(expected))
        out[corpus] = round(statistics.mean(overlaps), 4)
    return out


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = np.sum(a * b, axis=1)
    return {
        "min": round(float(c.min()), 4),
        "p1": round(float(np.percentile(c, 1)), 4),
        "mean": round(float(c.mean()), 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="latency rounds over the questions")
    parser.add_argument("--queries", type=int, default=0, help="questions timed (0: all)")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    dev = generate(args.seed)
    turns = [t.text for t in dev.turns]
    facts = [f.text for f in dev.facts]
    questions = [q.text for q in dev.questions]
    texts = turns + facts + questions
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:10]
    embed = embedders(settings.EMBEDDER_THREADS)
    print(
        f"seed {args.seed}: {len(questions)} questions, {len(facts)} facts, {len(turns)} turns;"
        f" {settings.EMBEDDER_THREADS} thread(s) per runtime",
        flush=True,
    )

    # fidelity ------------------------------------------------------------------------------
    cached = Path(settings.DATA_DIR) / "bench" / "quality" / f"seed{args.seed}-{digest}"
    vectors = {
        "torch": embed_all(
            embed["torch"], texts, cached.with_name(cached.name + "-all-MiniLM-L6-v2.npy")
        )
    }
    for name in (FLOAT, INT8):
        started = time.monotonic()
        vectors[name] = embed_all(embed[name], texts)
        print(f"  {name}: embedded {len(texts)} texts in {time.monotonic() - started:.0f} s")
    n_turns, n_docs = len(turns), len(turns) + len(facts)
    corpora = {
        "facts": (
            [f.person for f in dev.facts],
            {k: v[n_turns:n_docs] for k, v in vectors.items()},
        ),
        "turns": ([t.person for t in dev.turns], {k: v[:n_turns] for k, v in vectors.items()}),
    }
    queries = {k: v[n_docs:] for k, v in vectors.items()}
    people = [q.person for q in dev.questions]
    fidelity = {}
    for name in (FLOAT, INT8):
        fidelity[name] = {
            "cosine to torch, queries": cosines(queries[name], queries["torch"]),
            "cosine to torch, documents": cosines(
                vectors[name][:n_docs], vectors["torch"][:n_docs]
            ),
            "recall@10 vs torch, queries only": recall_vs_torch(
                people, corpora, queries, name, with_documents=False
            ),
            "recall@10 vs torch, queries and documents": recall_vs_torch(
                people, corpora, queries, name, with_documents=True
            ),
        }

    # cost ----------------------------------------------------------------------------------
    timed = questions[: args.queries] if args.queries else questions
    print(f"timing {len(timed)} questions x {args.rounds} rounds x {len(embed)} runtimes ...")
    cost = latency(embed, timed, args.rounds, rng)
    throughput = batch_throughput(embed, turns, rounds=3)
    hit_us = cache_hit_cost(queries[FLOAT][0].tolist())

    print(f"\nsingle-query embedding, ms (load average {os.getloadavg()[0]:.1f})")
    print(f"  {'runtime':10} {'p50':>7} {'p95':>7} {'p99':>7} {'p50/torch':>10} {'paired':>7}")
    for name in RUNTIMES:
        c = cost[name]
        print(
            f"  {name:10} {c['p50']:>7} {c['p95']:>7} {c['p99']:>7}"
            f" {c['p50 / torch p50']:>10} {c['median per-query ratio']:>7}"
        )
    print(f"  a query-cache hit: {hit_us} us")
    print("\nbatch writes, texts/s (64 a call):", throughput)
    print("\nfidelity against torch")
    for name, f in fidelity.items():
        print(f"  {name}")
        for what, value in f.items():
            print(f"    {what}: {value}")

    out = ROOT / "results" / f"query-embedding-seed{args.seed}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "seed": args.seed,
                "threads": settings.EMBEDDER_THREADS,
                "latency_ms": cost,
                "batch_texts_per_s": throughput,
                "cache_hit_us": hit_us,
                "fidelity": fidelity,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {out.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
