"""Hybrid recall with its keyword leg beside the query's embedding, against one after the other.

    .venv/bin/python bench/recall_overlap.py              # seed 1, 300 questions, local model

On the development set of bench/retrieval_quality.py (run that first: it loads the set into
`kindmem_bench_quality`), each question is recalled in hybrid mode as its person's run would,
twice, in alternating order: `recall_search` (the keyword leg runs while the query is embedded
on the embedding threads) and the query embedded first, then `recall_search_embedded` (one after
the other). The query cache is off, so every recall embeds. Prints p50 / p95 ms of each and
checks that both gave the same hits.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench import retrieval_quality as quality  # noqa: E402
from bench._database import use_bench_database  # noqa: E402
from bench._timing import percentiles_ms  # noqa: E402
from kindmem.models import Tenant  # noqa: E402
from kindmem.row_security import tenant_context  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()

    dev = quality.generate(args.seed)
    texts = (
        [t.text for t in dev.turns] + [f.text for f in dev.facts] + [q.text for q in dev.questions]
    )
    tag = f"seed{args.seed}-{hashlib.sha256(chr(0).join(texts).encode()).hexdigest()[:10]}"
    use_bench_database(quality.DATABASE, fresh=False)
    tenant = Tenant.objects.filter(name=f"devset-{tag}-local").first()
    if tenant is None:
        raise SystemExit(f"run bench/retrieval_quality.py --seed {args.seed} first")
    runs = quality.run_readers(dev, tenant)
    settings.EMBEDDER = "local"
    settings.QUERY_CACHE_SIZE = 0

    from embeddings.providers import embed_query, get_embedder
    from recall.search import RecallQuery, Selection, recall_search, recall_search_embedded

    embedder = get_embedder()
    assert embedder is not None
    embedder.embed(["warm up"])
    samples: dict[str, list[float]] = {"beside": [], "after": []}
    differing = 0
    for i, question in enumerate(dev.questions[: args.questions]):
        request = RecallQuery(
            tenant_id=tenant.id,
            readers=runs[question.person],
            selections=[Selection(agent_id=quality.AGENT, participant_id=question.person)],
            mode="hybrid",
            top_k=quality.K,
            roles=quality.ROLES,
            query=question.text,
        )
        found = {}
        with tenant_context(tenant.id):
            for name in ("beside", "after") if i % 2 else ("after", "beside"):
                started = time.perf_counter()
                if name == "beside":
                    hits = recall_search(request=request)
                else:
                    vector, model = embed_query(question.text)
                    hits = recall_search_embedded(request=request, vector=vector, model=model)
                samples[name].append(time.perf_counter() - started)
                found[name] = [h.message.pk for h in hits]
        differing += found["beside"] != found["after"]
    for name, label in (("after", "one after the other"), ("beside", "beside the embedding")):
        p = percentiles_ms(samples[name])
        print(f"{label:<24} p50 {p[50]:6.2f} ms   p95 {p[95]:6.2f} ms   n {len(samples[name])}")
    print(f"questions whose hits differed: {differing}")


if __name__ == "__main__":
    main()
