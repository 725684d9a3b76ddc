"""The floors of `abstain` (retrieval/relevance.py), calibrated on the tuning split of the
conversation set (bench/convset.py) and checked on the held-out split.

    .venv/bin/python bench/relevance_thresholds.py            # prints the chosen floors
    .venv/bin/python bench/relevance_thresholds.py --budget 0.01

For each corpus (recall, facts) and question, kindmem's own keyword and semantic legs
(`keyword_leg`, `semantic_leg`: guard included) are read `HYBRID.depth(10)` deep with their
scores; a floor is then applied in Python exactly as the search applies it (one-leg modes: the
first 10 over the floor; hybrid: each leg over its floor, fused by `HYBRID`, the first 10). The
chosen floor of a mode is the one that leaves the most no-answer questions with nothing while
the answerable questions' recall@10 drops by at most `--budget` (0.02) on the tuning split; the
held-out split's figures are printed beside, never used to choose. Paste the result into
config/settings.py `RELEVANCE_THRESHOLDS`.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from bench.retrieval_conv import AGENT, prepared  # sets Django up
from facts.models import Revision
from kindmem.row_security import tenant_context
from retrieval.fusion import HYBRID

K = 10
DEPTH = HYBRID.depth(K)
OFF = float("inf")  # a floor no score reaches: the leg says nothing


Leg = list[tuple[str, float]]  # (evidence id, leg score) best first


def recall_legs(dev: Any, tenant: Any, runs: dict, q_vectors: Any, model: str) -> dict:
    from recall.search import RecallQuery, Selection, keyword_leg, recallable, semantic_leg

    out = {}
    for i, q in enumerate(dev.questions):
        request = RecallQuery(
            tenant_id=tenant.id,
            readers=runs[q.person],
            selections=[Selection(agent_id=AGENT, participant_id=q.person)],
            mode="hybrid",
            top_k=K,
            roles=("user", "agent"),
            query=q.text,
        )
        with tenant_context(tenant.id):
            base = recallable(request)
            kw = keyword_leg(base, q.text, DEPTH)
            sem = semantic_leg(base, DEPTH, q_vectors[i].tolist(), model)

        def ident(m: Any) -> str:
            return f"{m.conversation.thread_id}-t{m.sequence}"

        out[q.id] = ([(ident(m), s) for m, s in kw], [(ident(m), s) for m, s in sem])
    return out


def fact_legs(dev: Any, tenant: Any, runs: dict, q_vectors: Any, model: str) -> dict:
    from facts.search import FactSearch, keyword_leg, semantic_leg

    dev_id = dict(Revision.objects.filter(tenant=tenant).values_list("id", "content__dev_id"))
    out = {}
    for i, q in enumerate(dev.questions):
        search = FactSearch(
            tenant_id=tenant.id, readers=runs[q.person], mode="hybrid", query=q.text, top_k=K
        )
        with tenant_context(tenant.id):
            kw = keyword_leg(search, DEPTH)
            sem = semantic_leg(search, DEPTH, q_vectors[i].tolist(), model)
        out[q.id] = ([(dev_id[r.id], s) for r, s in kw], [(dev_id[r.id], s) for r, s in sem])
    return out


def answer(mode: str, legs: tuple[Leg, Leg], kw_floor: float, sem_floor: float) -> list[str]:
    keyword = [d for d, s in legs[0] if s >= kw_floor]
    semantic = [d for d, s in legs[1] if s >= sem_floor]
    if mode == "keyword":
        return keyword[:K]
    if mode == "semantic":
        return semantic[:K]
    fused = HYBRID.fuse({"keyword": keyword, "semantic": semantic}, key=lambda d: d)
    return [f.item for f in fused[:K]]


def score(
    questions: Sequence[Any], legs: dict, mode: str, kw: float, sem: float
) -> tuple[float, float]:
    """(answerable recall@10, share of no-answer questions answered with nothing)."""
    recalls, silent = [], []
    for q in questions:
        ranked = answer(mode, legs[q.id], kw, sem)
        if q.kind == "none":
            silent.append(not ranked)
        else:
            recalls.append(sum(e in ranked for e in q.evidence) / len(q.evidence))
    return statistics.mean(recalls), statistics.mean(silent)


def candidates(questions: Sequence[Any], legs: dict, leg: int) -> list[float]:
    """Floors worth trying for one leg: no floor, every no-answer question's best score of the
    leg (a floor just above it silences that question) and every answerable evidence's."""
    values = {0.0 if leg else -1.0}
    for q in questions:
        for d, s in legs[q.id][leg]:
            if q.kind == "none" or d in q.evidence:
                values.add(round(s + 1e-6, 6))
    return sorted(values)


def calibrate(
    dev: Any, legs: dict, budget: float, thin: Callable[[list[float]], list[float]]
) -> dict:
    tune = [q for q in dev.questions if q.split == "tune"]
    held = [q for q in dev.questions if q.split == "held"]
    out = {}
    for mode in ("keyword", "semantic", "hybrid"):
        base_tune = score(tune, legs, mode, -1.0, -1.0)
        base_held = score(held, legs, mode, -1.0, -1.0)
        kws = candidates(tune, legs, 0) if mode != "semantic" else [-1.0]
        sems = candidates(tune, legs, 1) if mode != "keyword" else [-1.0]
        if mode == "hybrid":
            kws, sems = [*thin(kws), OFF], thin(sems)
        best = (base_tune[1], -1.0, -1.0, base_tune)
        for kw in kws:
            for sem in sems:
                figures = score(tune, legs, mode, kw, sem)
                if base_tune[0] - figures[0] <= budget and figures[1] > best[0]:
                    best = (figures[1], kw, sem, figures)
        _, kw, sem, chosen = best
        held_figures = score(held, legs, mode, kw, sem)
        out[mode] = {
            "keyword_floor": kw,
            "semantic_floor": sem,
            "tune": {
                "recall@10": base_tune[0],
                "abstain_recall@10": chosen[0],
                "silent": chosen[1],
            },
            "held": {
                "recall@10": base_held[0],
                "abstain_recall@10": held_figures[0],
                "silent": held_figures[1],
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument("--budget", type=float, default=0.02, help="recall@10 it may cost")
    args = parser.parse_args()
    dev, tenant, runs, q_vectors, model = prepared(args.seed, args.embedder)

    def thin(values: list[float]) -> list[float]:  # at most ~60 floors a leg for the 2-D grid
        step = max(1, len(values) // 60)
        return values[::step]

    settings_out: dict[str, float] = {}
    for corpus, reader in (("recall", recall_legs), ("facts", fact_legs)):
        legs = reader(dev, tenant, runs, q_vectors, model)
        result = calibrate(dev, legs, args.budget, thin)
        print(f"\n{corpus}: floor(s), then answerable recall@10 before -> with floors, silent")
        for mode, e in result.items():
            print(
                f"  {mode:8} keyword >= {e['keyword_floor']:.4g}, semantic >= {e['semantic_floor']:.4g}"  # noqa: E501
            )
            for split in ("tune", "held"):
                f = e[split]
                print(
                    f"    {split}: R@10 {f['recall@10']:.3f} -> {f['abstain_recall@10']:.3f},"
                    f" silent on no-answer {f['silent']:.3f}"
                )
            if mode == "hybrid":
                settings_out[f"{corpus}.hybrid.keyword"] = e["keyword_floor"]
                settings_out[f"{corpus}.hybrid.semantic"] = e["semantic_floor"]
            else:
                settings_out[f"{corpus}.{mode}"] = e[f"{mode}_floor"]
    print("\nRELEVANCE_THRESHOLDS =", json.dumps(settings_out, indent=1))


if __name__ == "__main__":
    main()
