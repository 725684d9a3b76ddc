"""Throughput of the local embedder (all-MiniLM-L6-v2 on CPU): texts per second by batch size.

    .venv/bin/python bench/embed_throughput.py [--repetitions 5] [--threads 1]

Prints the model's load time (importing torch included, as a fresh process pays it) and, for
batch sizes 1, 16 and 64, the median and p90 over the repetitions of texts per second and of
the milliseconds one batch takes. The texts are short, fact-like sentences of varied length.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SUBJECTS = ["Alice", "The customer", "Bob's team", "Priya", "The billing service", "Our CTO"]
VERBS = ["prefers", "asked about", "is allergic to", "wants a reminder for", "complained about"]
OBJECTS = [
    "window seats on long flights",
    "the quarterly tax filing deadline",
    "green tea in the afternoon",
    "the migration of the payments database to the new cluster next month",
    "invoices in euros",
    "meetings before ten in the morning, because of the school run",
]


def texts(count: int, rng: random.Random) -> list[str]:
    return [
        " ".join((rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)))
        + f" (note {rng.randint(1, 10**6)})"
        for _ in range(count)
    ]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (0: torch's default, one per core)"
    )
    args = parser.parse_args()

    started = time.perf_counter()
    from embeddings import local

    model = local.loaded_model(threads=args.threads)
    load_seconds = time.perf_counter() - started
    import torch

    embedder = local.LocalEmbedder(threads=args.threads)
    rng = random.Random(42)
    embedder.embed(texts(64, rng))  # warm-up: first-call allocations are not throughput

    print(
        f"model {local.MODEL_NAME} ({model.get_embedding_dimension()} dims), torch "
        f"{torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    print(f"load (import torch + weights): {load_seconds:.2f} s")
    print(
        f"{'batch':>5}  {'texts/s p50':>11}  {'texts/s p90':>11}  {'ms/batch p50':>12}  "
        f"{'ms/batch p90':>12}"
    )
    for batch in args.batches:
        # Each repetition embeds about 128 texts (at least one batch) so small batches are not
        # measured on a handful of calls.
        calls = max(1, 128 // batch)
        rates, latencies = [], []
        for _ in range(args.repetitions):
            inputs = [texts(batch, rng) for _ in range(calls)]
            began = time.perf_counter()
            for chunk in inputs:
                per_call = time.perf_counter()
                embedder.embed(chunk)
                latencies.append((time.perf_counter() - per_call) * 1000)
            rates.append(batch * calls / (time.perf_counter() - began))
        # p90 of a rate is its slow tail: the 10th percentile of texts per second.
        print(
            f"{batch:>5}  {statistics.median(rates):>11.1f}  {percentile(rates, 0.1):>11.1f}  "
            f"{statistics.median(latencies):>12.1f}  {percentile(latencies, 0.9):>12.1f}"
        )


if __name__ == "__main__":
    main()
