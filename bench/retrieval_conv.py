"""Retrieval quality on the conversation set (bench/convset.py, issue 45): recall@1/5/10 and
precision@5 per question kind, per split (tuning, held out), per mode, for conversation recall
and for fact search, through kindmem's own search functions (guard and row security included).

    .venv/bin/python bench/retrieval_conv.py                      # both corpora, every mode
    .venv/bin/python bench/retrieval_conv.py --corpus recall --abstain   # calibrated silence
    .venv/bin/python bench/retrieval_conv.py --label after-idf    # a named entry in the JSON

Loaded into its own database (`kindmem_bench_conv`, kept; one tenant per set and embedder):
each session of a person is a conversation of theirs with the agent, its turns dated at the
session's date (user and agent turns, recalled both); every user turn is also a fact of the
person (participant-scoped), as if extracted, with the same vector. Each question is asked as
a run for its person; its vector is precomputed (the local model, cached under
var/bench/quality/), so the figures exclude the embedding.

Per question: recall@k = the share of its evidence turns in the first k hits; precision@5 =
evidence among the first 5 hits over the hits there are (at most 5; nothing returned: 0), over
the answerable questions. Questions with no answer ("none") report `silent`, the share
answered with nothing, and the mean number of hits. Writes
bench/results/conv-seed<seed>-<embedder>.json (one entry per `--label`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from django.db import connection, transaction

from bench._database import use_bench_database
from bench.convset import ConvSet, generate
from bench.retrieval_quality import (  # sets Django up
    Precomputed,
    embed_all,
    run_readers,
    use_precomputed,
)
from facts.models import EmbeddingState, Fact, Revision
from facts.provenance import content_hash
from kindmem.models import Tenant
from kindmem.row_security import tenant_context
from recall.models import Conversation, Message

DATABASE = "kindmem_bench_conv"
ROOT = Path(__file__).resolve().parent
AGENT = "companion"
MODES = ("keyword", "semantic", "hybrid")
KINDS = ("single", "changed", "multi", "temporal", "none")
SPLITS = ("tune", "held")
K = 10


@transaction.atomic  # all or nothing: a set found by its tenant's name is complete
def load(dev: ConvSet, name: str, vectors: np.ndarray, model: str) -> Tenant:
    from tests import factories

    tenant = factories.tenant_create(name)
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org, name="devset")
    agent = factories.agent_create(tenant, agent_id=AGENT)
    sessions: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, t in enumerate(dev.turns):
        sessions[(t.person, t.session)].append(i)
    conversations = Conversation.objects.bulk_create(
        Conversation(
            tenant=tenant,
            thread_id=f"{person}-s{session}",
            agent=agent,
            project=project,
            participant_id=person,
            last_sequence=len(indexes),
            created_at=datetime.fromisoformat(dev.turns[indexes[0]].at),
        )
        for (person, session), indexes in sessions.items()
    )
    Message.objects.bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            sequence=dev.turns[i].sequence,
            role=dev.turns[i].role,
            text=dev.turns[i].text,
            created_at=datetime.fromisoformat(dev.turns[i].at),
            embedding=vectors[i].tolist(),
            embedding_model=model,
        )
        for conversation, indexes in zip(conversations, sessions.values(), strict=True)
        for i in indexes
    )
    users = [i for i, t in enumerate(dev.turns) if t.role == "user"]
    facts = Fact.objects.bulk_create(
        Fact(
            tenant=tenant, type="note", org=org, project=project, participant_id=dev.turns[i].person
        )
        for i in users
    )
    Revision.objects.bulk_create(
        Revision(
            tenant=tenant,
            fact=fact,
            version=1,
            content={"text": dev.turns[i].text, "dev_id": dev.turns[i].id},
            content_hash=content_hash({"text": dev.turns[i].text}, None, None),
            attributed_kind="service",
            attributed_id="devset",
            search_text=dev.turns[i].text,
            observed_at=datetime.fromisoformat(dev.turns[i].at),
            embedding=vectors[i].tolist(),
            embedding_model=model,
            embedding_state=EmbeddingState.DONE,
        )
        for fact, i in zip(facts, users, strict=True)
    )
    return tenant


def ask_recall(tenant: Tenant, runs: dict, options: dict[str, Any]) -> Callable:
    from recall.search import RecallQuery, Selection, recall_search

    def ask(q: Any, mode: str) -> list[str]:
        request = RecallQuery(
            tenant_id=tenant.id,
            readers=runs[q.person],
            selections=[Selection(agent_id=AGENT, participant_id=q.person)],
            mode=mode,
            top_k=K,
            roles=("user", "agent"),
            query=q.text,
            **options,
        )
        with tenant_context(tenant.id):
            hits = recall_search(request=request)
        return [f"{h.message.conversation.thread_id}-t{h.message.sequence}" for h in hits]

    return ask


def ask_facts(tenant: Tenant, runs: dict, options: dict[str, Any]) -> Callable:
    from facts.search import FactSearch, fact_search

    dev_id = dict(Revision.objects.filter(tenant=tenant).values_list("id", "content__dev_id"))

    def ask(q: Any, mode: str) -> list[str]:
        search = FactSearch(
            tenant_id=tenant.id,
            readers=runs[q.person],
            mode=mode,
            query=q.text,
            top_k=K,
            **options,
        )
        with tenant_context(tenant.id):
            hits = fact_search(search=search)
        return [dev_id[h.revision.id] for h in hits]

    return ask


def figures(questions: Sequence[Any], ranked: dict[str, list[str]]) -> dict[str, dict]:
    """Per split and kind (and "all" answerable): recall@1/5/10, precision@5; for "none":
    silent share and mean hits."""
    out: dict[str, dict] = {}
    for split in SPLITS:
        table: dict[str, dict] = {}
        for kind in (*KINDS, "answerable"):
            qs = [
                q
                for q in questions
                if q.split == split
                and (q.kind == kind or (kind == "answerable" and q.kind != "none"))
            ]
            if not qs:
                continue
            if kind == "none":
                table[kind] = {
                    "n": len(qs),
                    "silent": round(statistics.mean(not ranked[q.id] for q in qs), 3),
                    "mean_hits": round(statistics.mean(len(ranked[q.id]) for q in qs), 2),
                }
                continue
            row: dict[str, float] = {"n": len(qs)}
            for k in (1, 5, 10):
                row[f"R@{k}"] = round(
                    statistics.mean(
                        sum(e in ranked[q.id][:k] for e in q.evidence) / len(q.evidence) for q in qs
                    ),
                    3,
                )
            row["P@5"] = round(
                statistics.mean(
                    sum(h in q.evidence for h in ranked[q.id][:5]) / max(1, len(ranked[q.id][:5]))
                    for q in qs
                ),
                3,
            )
            table[kind] = row
        out[split] = table
    return out


def print_figures(title: str, table: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"  {'split':5} {'kind':11} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'P@5':>6}")
    for split, kinds in table.items():
        for kind, e in kinds.items():
            if kind == "none":
                print(
                    f"  {split:5} {kind:11} {e['n']:>4} silent {e['silent']:.3f},"
                    f" {e['mean_hits']} hits each"
                )
            else:
                print(
                    f"  {split:5} {kind:11} {e['n']:>4} {e['R@1']:>6} {e['R@5']:>6}"
                    f" {e['R@10']:>6} {e['P@5']:>6}"
                )


def prepared(seed: int, embedder: str) -> tuple[ConvSet, Tenant, dict, np.ndarray, str]:
    """The set, loaded (once per set and embedder), its runs, the questions' vectors (as the
    search's embedder answers them) and the model's name."""
    dev = generate(seed)
    texts = [t.text for t in dev.turns] + [q.text for q in dev.questions]
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:10]
    tag = f"conv-seed{seed}-{digest}"
    print(
        f"conversation set seed {seed}: {len(dev.conversations)} conversations,"
        f" {len(dev.turns)} turns, {len(dev.questions)} questions",
        flush=True,
    )
    vectors, model = embed_all(texts, embedder, tag)
    q_vectors = vectors[len(dev.turns) :]
    use_precomputed(
        Precomputed(model, {q.text: q_vectors[i].tolist() for i, q in enumerate(dev.questions)})
    )
    use_bench_database(DATABASE, fresh=False)
    name = f"{tag}-{embedder}"
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        print("loading ...", flush=True)
        tenant = load(dev, name, vectors, model)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE facts_revision; ANALYZE recall_message; ANALYZE facts_fact")
    return dev, tenant, run_readers(dev, tenant), q_vectors, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument("--label", default="latest", help="this run's name in the JSON file")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--corpus", nargs="+", choices=["recall", "facts"], default=["recall", "facts"]
    )
    parser.add_argument(
        "--abstain", action="store_true", help="ask with abstain (the calibrated thresholds)"
    )
    parser.add_argument(
        "--temporal-weight", type=float, help="the temporal leg's weight in hybrid recall's fusion"
    )
    args = parser.parse_args()
    if args.temporal_weight is not None:
        import dataclasses

        import recall.search

        hybrid = recall.search.HYBRID
        weights = {**hybrid.weights, "temporal": args.temporal_weight}
        recall.search.HYBRID = dataclasses.replace(hybrid, weights=weights)
    dev, tenant, runs, _, _ = prepared(args.seed, args.embedder)
    options: dict[str, Any] = {"abstain": True} if args.abstain else {}
    results: dict[str, Any] = {"seed": args.seed, "embedder": args.embedder, "options": options}
    for corpus in args.corpus:
        ask = (ask_recall if corpus == "recall" else ask_facts)(tenant, runs, options)
        for mode in args.modes:
            samples: list[float] = []
            ranked = {}
            for q in dev.questions:
                started = time.perf_counter()
                ranked[q.id] = ask(q, mode)
                samples.append(time.perf_counter() - started)
            table = figures(dev.questions, ranked)
            p50 = round(statistics.median(samples) * 1000, 2)
            results[f"{corpus} {mode}"] = {"p50_ms": p50, **table}
            print_figures(f"{corpus} {mode} (p50 {p50} ms)", table)
    out = ROOT / "results" / f"conv-seed{args.seed}-{args.embedder}.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous[args.label] = results
    out.write_text(json.dumps(previous, indent=1) + "\n")
    print(f"\nwrote {out.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
