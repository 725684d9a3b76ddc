"""What the issue-45 arms cost a search in-process: each question of the conversation set
(bench/convset.py) asked as hybrid recall and hybrid fact search, with every arm off (no
temporal arm, no abstain) and on (temporal arm, abstain), alternated question by question so
that the machine's load falls on both alike; p50 and p95 of each, and the ratio on / off.

    .venv/bin/python bench/arms_cost.py             # 930 questions x 2 corpora x 2 settings

Query vectors precomputed (bench/retrieval_conv.py), so the figures are the SQL and Python of
a search, which is what the arms add to; no cross-encoder is configured (it is off unless the
operator names one, and then bounded by its budget).
"""

from __future__ import annotations

import statistics
import time

from django.conf import settings

from bench.retrieval_conv import ask_facts, ask_recall, prepared  # sets Django up


def main() -> None:
    dev, tenant, runs, _, _ = prepared(1, "local")
    for corpus, asker in (("recall", ask_recall), ("facts", ask_facts)):
        off, on = asker(tenant, runs, {}), asker(tenant, runs, {"abstain": True})
        samples: dict[str, list[float]] = {"off": [], "on": []}
        for i, q in enumerate(dev.questions):
            order = [("off", off, ()), ("on", on, ("temporal",))]
            for name, ask, arms in order if i % 2 else order[::-1]:
                settings.RETRIEVAL_ARMS = arms
                started = time.perf_counter()
                ask(q, "hybrid")
                samples[name].append(time.perf_counter() - started)
        p = {
            n: (statistics.median(s) * 1000, statistics.quantiles(s, n=20)[18] * 1000)
            for n, s in samples.items()
        }
        print(
            f"{corpus} hybrid, {len(dev.questions)} questions: arms off p50 {p['off'][0]:.2f} ms"
            f" (p95 {p['off'][1]:.2f}), on p50 {p['on'][0]:.2f} ms (p95 {p['on'][1]:.2f});"
            f" p50 ratio {p['on'][0] / p['off'][0]:.3f}"
        )


if __name__ == "__main__":
    main()
