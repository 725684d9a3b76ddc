"""Choosing hybrid search's fusion for bench/retrieval_quality.py's `--fusion-grid`: every
question's two legs from kindmem's own leg functions, fused at each depth, RRF k and keyword
weight of the grid. Imported after `django.setup()`."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import numpy as np

from bench.devset import DevSet
from bench.retrieval_baselines import (
    AGENT,
    MODES,
    ROLES,
    K,
    scored,
)
from facts.models import Revision
from kindmem.models import Tenant
from kindmem.row_security import tenant_context
from recall.models import Message

GRID_DEPTHS = (10, 20, 30, 50, 100)  # candidates per leg, for top_k 10
GRID_KS = (1, 5, 10, 20, 30, 60, 100)
GRID_KEYWORD_WEIGHTS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)  # the semantic leg's weight is 1


def leg_lists(dev: DevSet, tenant: Tenant, runs: dict, q_vectors: np.ndarray, model: str) -> dict:
    """Every question's two legs, 100 deep, for facts and recall, as evidence ids: kindmem's own
    leg functions, so that fusing their prefixes is exactly what hybrid search would return."""
    from facts.search import FactSearch
    from facts.search import keyword_leg as fact_keyword
    from facts.search import semantic_leg as fact_semantic
    from recall.search import RecallQuery, Selection, recallable
    from recall.search import keyword_leg as recall_keyword
    from recall.search import semantic_leg as recall_semantic

    depth = max(GRID_DEPTHS)
    dev_id = dict(Revision.objects.filter(tenant=tenant).values_list("id", "content__dev_id"))
    out: dict[str, list] = {"facts": [], "recall": []}
    with tenant_context(tenant.id):
        for qi, q in enumerate(dev.questions):
            vector = q_vectors[qi].tolist()
            search = FactSearch(
                tenant_id=tenant.id, readers=runs[q.person], mode="hybrid", query=q.text
            )
            out["facts"].append(
                {
                    "keyword": [dev_id[r.id] for r, _ in fact_keyword(search, depth)],
                    "semantic": [
                        dev_id[r.id] for r, _ in fact_semantic(search, depth, vector, model)
                    ],
                }
            )
            base = recallable(
                RecallQuery(
                    tenant_id=tenant.id,
                    readers=runs[q.person],
                    selections=[Selection(agent_id=AGENT, participant_id=q.person)],
                    mode="hybrid",
                    top_k=K,
                    roles=ROLES,
                    query=q.text,
                )
            )

            def ref(m: Message) -> str:
                return f"{m.conversation.thread_id}-t{m.sequence}"

            out["recall"].append(
                {
                    "keyword": [ref(m) for m, _ in recall_keyword(base, q.text, depth)],
                    "semantic": [ref(m) for m, _ in recall_semantic(base, depth, vector, model)],
                }
            )
    return out


def fusion_grid(dev: DevSet, legs: dict) -> list[dict]:
    """recall@10 of every (depth, k, keyword weight) on facts and recall, beside each leg's."""
    from retrieval.fusion import fuse_by_rank

    def mean_recall(corpus: str, ranked_of: Callable) -> float:
        evidence = "fact_evidence" if corpus == "facts" else "turn_evidence"
        return statistics.mean(
            scored(ranked_of(lists), getattr(q, evidence))[0]
            for q, lists in zip(dev.questions, legs[corpus], strict=True)
        )

    rows = []
    base = {
        corpus: {leg: mean_recall(corpus, lambda lists, leg=leg: lists[leg]) for leg in MODES[:2]}
        for corpus in legs
    }
    for depth in GRID_DEPTHS:
        for k in GRID_KS:
            for w in GRID_KEYWORD_WEIGHTS:
                weights = {"keyword": w, "semantic": 1.0}
                row = {"depth": depth, "k": k, "keyword_weight": w}
                for corpus in legs:
                    row[corpus] = round(
                        mean_recall(
                            corpus,
                            lambda lists, d=depth, k=k, weights=weights: [
                                f.item
                                for f in fuse_by_rank(
                                    {leg: lists[leg][:d] for leg in ("keyword", "semantic")},
                                    key=lambda i: i,
                                    k=k,
                                    weights=weights,
                                )
                            ],
                        ),
                        4,
                    )
                    row[f"{corpus} margin"] = round(row[corpus] - max(base[corpus].values()), 4)
                rows.append(row)
    print(
        "\nlegs alone, recall@10:",
        {c: {k: round(v, 3) for k, v in b.items()} for c, b in base.items()},
    )
    rows.sort(key=lambda r: -(r["facts"] + r["recall"]))
    print(
        f"  {'depth':>5} {'k':>4} {'w_kw':>5} {'facts':>7} {'margin':>7}"
        f" {'recall':>7} {'margin':>7}"
    )
    for r in rows[:25]:
        print(
            f"  {r['depth']:>5} {r['k']:>4} {r['keyword_weight']:>5} {r['facts']:>7}"
            f" {r['facts margin']:>7} {r['recall']:>7} {r['recall margin']:>7}"
        )
    return rows
