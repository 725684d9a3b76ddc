"""Retrieval quality on the development set (bench/devset.py): recall@10 and MRR per mode, for
fact search and conversation recall, beside plain baselines computed here.

    .venv/bin/python bench/retrieval_quality.py                 # seed 1, the local model
    .venv/bin/python bench/retrieval_quality.py --seed 2        # the held-out seed
    .venv/bin/python bench/retrieval_quality.py --embedder hashing   # no model (fast, weak)
    .venv/bin/python bench/retrieval_quality.py --fusion-grid        # how hybrid should fuse
    .venv/bin/python bench/retrieval_quality.py --rerank mmr recency trust slot  # each reranker

Loads the set into its own database (`kindmem_bench_quality`, kept; one tenant per set and
embedder, reused while the generator is unchanged), each person's facts scoped to them and
their conversation as sessions (one conversation per session). Every question is asked as a
run for its person, through kindmem's own search functions (`fact_search`, `recall_search`,
guard and row security included; recall over user and agent turns), with its vector
precomputed so that figures and latencies exclude the embedding.

Figures per question: recall@10 = the share of its evidence in the top 10 (turn-level for
recall, fact-level for facts), MRR = 1 / rank of the first evidence (0 past 10). Beside
kindmem's modes, the baselines the issue names, over the same texts and vectors and the same
per-person candidates: plain BM25 (k1 1.2, b 0.75, over the same PostgreSQL lexemes), plain
dense (exact cosine, numpy) and plain RRF of the two (k 60, full lists).

Vectors are cached under var/bench/quality/. Writes JSON to
bench/results/quality-seed<seed>-<embedder>.json (one entry per `--label`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench.devset import DevSet, generate  # noqa: E402
from bench.retrieval_baselines import (  # noqa: E402
    AGENT,
    MODES,
    ROLES,
    K,
    baselines,
    lexemes_of,
    scored,
    summarise,
)
from bench.retrieval_fusion import fusion_grid, leg_lists  # noqa: E402
from embeddings.providers import HashingEmbedder  # noqa: E402
from facts.models import EmbeddingState, Fact, Revision  # noqa: E402
from facts.provenance import content_hash  # noqa: E402
from kindmem.access import readers_for  # noqa: E402
from kindmem.models import Tenant  # noqa: E402
from kindmem.row_security import tenant_context  # noqa: E402
from recall.models import Conversation, Message  # noqa: E402
from retrieval import fulltext  # noqa: E402

DATABASE = "kindmem_bench_quality"
ROOT = Path(__file__).resolve().parent


# --- vectors ------------------------------------------------------------------------------------


def embed_all(texts: list[str], embedder_name: str, tag: str) -> tuple[np.ndarray, str]:
    """Unit vectors for `texts` (cached per set and embedder), and the model's name."""
    if embedder_name == "hashing":
        hashing = HashingEmbedder()
        return np.asarray(hashing.embed(texts), dtype=np.float32), hashing.model
    from embeddings.local import LocalEmbedder

    embedder = LocalEmbedder(threads=settings.EMBEDDER_THREADS)
    folder = Path(settings.DATA_DIR) / "bench" / "quality"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{tag}-all-MiniLM-L6-v2.npy"
    if path.exists():
        return np.load(path), embedder.model
    started = time.monotonic()
    out: list[list[float]] = []
    for start in range(0, len(texts), 256):
        out.extend(embedder.embed(texts[start : start + 256]))
        print(f"  embedded {len(out)}/{len(texts)}", flush=True)
    vectors = np.asarray(out, dtype=np.float32)
    np.save(path, vectors)
    print(f"  {len(texts) / (time.monotonic() - started):.0f} texts/s", flush=True)
    return vectors, embedder.model


class Precomputed:
    """An embedder that answers from the vectors computed up front (the questions')."""

    dimensions = 384

    def __init__(self, model: str, vectors: dict[str, list[float]]) -> None:
        self.model = model
        self.vectors = vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def use_precomputed(embedder: Precomputed) -> None:
    """Every module's `require_embedder` answers with `embedder`."""
    import embeddings.providers

    original = embeddings.providers.require_embedder
    for module in list(sys.modules.values()):
        if getattr(module, "require_embedder", None) is original:
            module.require_embedder = lambda: embedder  # type: ignore[attr-defined]


# --- loading ------------------------------------------------------------------------------------


@transaction.atomic  # all or nothing: a set found by its tenant's name is complete
def load(dev: DevSet, name: str, vectors: np.ndarray, model: str) -> Tenant:
    """The set as one tenant: a project, an agent, each person's facts (participant-scoped)
    and sessions (one conversation each), all written straight to the tables."""
    from tests import factories

    tenant = factories.tenant_create(name)
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org, name="devset")
    agent = factories.agent_create(tenant, agent_id=AGENT)
    n_turns = len(dev.turns)
    turn_vectors, fact_vectors = vectors[:n_turns], vectors[n_turns : n_turns + len(dev.facts)]
    facts = Fact.objects.bulk_create(
        Fact(tenant=tenant, type="note", org=org, project=project, participant_id=f.person)
        for f in dev.facts
    )
    Revision.objects.bulk_create(
        Revision(
            tenant=tenant,
            fact=fact,
            version=1,
            content={"text": f.text, "dev_id": f.id},
            content_hash=content_hash({"text": f.text}, None, None),
            attributed_kind="service",
            attributed_id="devset",
            search_text=f.text,
            embedding=vector.tolist(),
            embedding_model=model,
            embedding_state=EmbeddingState.DONE,
        )
        for fact, f, vector in zip(facts, dev.facts, fact_vectors, strict=True)
    )
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
            embedding=turn_vectors[i].tolist(),
            embedding_model=model,
        )
        for conversation, indexes in zip(conversations, sessions.values(), strict=True)
        for i in indexes
    )
    return tenant


# --- measuring ----------------------------------------------------------------------------------


def timed(fn: Callable, samples: list[float]):
    started = time.perf_counter()
    out = fn()
    samples.append(time.perf_counter() - started)
    return out


def kindmem_facts(
    dev: DevSet, tenant: Tenant, runs: dict, modes: Sequence[str], rerank: tuple[str, ...] = ()
) -> dict:
    from facts.search import FactSearch, fact_search

    dev_id = dict(Revision.objects.filter(tenant=tenant).values_list("id", "content__dev_id"))
    out = {}
    for mode in modes:
        rows, samples, empty = [], [], 0
        for q in dev.questions:
            search = FactSearch(
                tenant_id=tenant.id,
                readers=runs[q.person],
                mode=mode,
                query=q.text,
                top_k=K,
                rerank=rerank,
            )
            try:
                with tenant_context(tenant.id):
                    hits = timed(lambda s=search: fact_search(search=s), samples)
            except ValueError:
                break
            empty += not hits
            ranked = [dev_id[h.revision.id] for h in hits]
            rows.append((q.style, *scored(ranked, q.fact_evidence)))
        if rows:
            out[mode] = {**summarise(rows), "empty": empty, "p50_ms": p50(samples)}
    return out


def kindmem_recall(
    dev: DevSet, tenant: Tenant, runs: dict, modes: Sequence[str], rerank: tuple[str, ...] = ()
) -> dict:
    from recall.search import RecallQuery, Selection, recall_search

    out = {}
    for mode in modes:
        rows, samples, empty = [], [], 0
        for q in dev.questions:
            request = RecallQuery(
                tenant_id=tenant.id,
                readers=runs[q.person],
                selections=[Selection(agent_id=AGENT, participant_id=q.person)],
                mode=mode,
                top_k=K,
                roles=ROLES,
                query=q.text,
                rerank=rerank,
            )
            try:
                with tenant_context(tenant.id):
                    hits = timed(lambda r=request: recall_search(request=r), samples)
            except ValueError:  # a mode this version does not have
                break
            empty += not hits
            ranked = [f"{h.message.conversation.thread_id}-t{h.message.sequence}" for h in hits]
            rows.append((q.style, *scored(ranked, q.turn_evidence)))
        if rows:
            out[mode] = {**summarise(rows), "empty": empty, "p50_ms": p50(samples)}
    return out


# --- reporting ----------------------------------------------------------------------------------


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def print_table(title: str, table: dict[str, dict]) -> None:
    styles = ("direct", "padded", "paraphrase", "all")
    print(f"\n{title}")
    print(
        f"  {'retriever':16} {'R@10':>6} {'MRR':>6} "
        + " ".join(f"{s:>10}" for s in styles)
        + f" {'empty':>6} {'p50 ms':>7}"
    )
    for name, e in table.items():
        print(
            f"  {name:16} {e['recall@10']:>6} {e['mrr']:>6} "
            + " ".join(f"{e.get(s, '-'):>10}" for s in styles)
            + f" {e.get('empty', '-'):>6} {e.get('p50_ms', '-'):>7}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument("--label", default="", help="a name for this run in the JSON file")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--rerank",
        nargs="+",
        metavar="CHAIN",
        help="instead: kindmem's modes without and with each reranker chain (retrieval/rerank.py;"
        " a chain is names joined by commas, e.g. slot,mmr), recall@10 and MRR before/after",
    )
    parser.add_argument(
        "--fusion-grid",
        action="store_true",
        help="instead: recall@10 of hybrid for every fusion depth, k and leg weight",
    )
    parser.add_argument(
        "--keyword-candidates",
        type=int,
        help="the keyword leg's rows per term (retrieval.fulltext.CANDIDATES_PER_TERM), lowered"
        " to see what the bound costs where it engages",
    )
    args = parser.parse_args()
    if args.keyword_candidates:
        fulltext.CANDIDATES_PER_TERM = args.keyword_candidates

    dev = generate(args.seed)
    texts = (
        [t.text for t in dev.turns] + [f.text for f in dev.facts] + [q.text for q in dev.questions]
    )
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:10]
    tag = f"seed{args.seed}-{digest}"
    print(
        f"development set seed {args.seed}: {len(dev.turns)} turns, {len(dev.facts)} facts,"
        f" {len(dev.questions)} questions {dict(Counter(q.style for q in dev.questions))}",
        flush=True,
    )
    vectors, model = embed_all(texts, args.embedder, tag)
    n_docs = len(dev.turns) + len(dev.facts)
    q_vectors = vectors[n_docs:]
    use_precomputed(
        Precomputed(model, {q.text: q_vectors[i].tolist() for i, q in enumerate(dev.questions)})
    )

    use_bench_database(DATABASE, fresh=False)
    name = f"devset-{tag}-{args.embedder}"
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        print("loading ...", flush=True)
        tenant = load(dev, name, vectors, model)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE facts_revision; ANALYZE recall_message; ANALYZE facts_fact")
    runs = run_readers(dev, tenant)

    if args.fusion_grid:
        grid = fusion_grid(dev, leg_lists(dev, tenant, runs, q_vectors, model))
        out = ROOT / "results" / f"fusion-grid-seed{args.seed}-{args.embedder}.json"
        out.write_text(json.dumps(grid, indent=1) + "\n")
        print(f"\nwrote {out.relative_to(ROOT.parent)}")
        return

    if args.rerank:
        rerank_table(dev, tenant, runs, args)
        return

    turn_lexemes = lexemes_of([t.text for t in dev.turns])
    fact_lexemes = lexemes_of([f.text for f in dev.facts])
    q_lexemes = lexemes_of([q.text for q in dev.questions])
    results: dict = {"seed": args.seed, "embedder": args.embedder, "label": args.label}
    results["facts"] = {
        **baselines(
            dev,
            [(f.id, f.person) for f in dev.facts],
            fact_lexemes,
            vectors[len(dev.turns) : n_docs],
            lambda q: q.fact_evidence,
            q_lexemes,
            q_vectors,
        ),
        **kindmem_facts(dev, tenant, runs, args.modes),
    }
    results["recall"] = {
        **baselines(
            dev,
            [(t.id, t.person) for t in dev.turns],
            turn_lexemes,
            vectors[: len(dev.turns)],
            lambda q: q.turn_evidence,
            q_lexemes,
            q_vectors,
        ),
        **kindmem_recall(dev, tenant, runs, args.modes),
    }
    print_table(f"facts ({len(dev.facts)} facts, {len(dev.questions)} questions)", results["facts"])
    print_table(
        f"recall ({len(dev.turns)} turns, roles user+agent, {len(dev.questions)} questions)",
        results["recall"],
    )
    out = ROOT / "results" / f"quality-seed{args.seed}-{args.embedder}.json"
    out.parent.mkdir(exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous[args.label or "latest"] = results
    out.write_text(json.dumps(previous, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT.parent)}")


def rerank_table(dev: DevSet, tenant: Tenant, runs: dict, args: argparse.Namespace) -> None:
    """recall@10 and MRR of kindmem's modes with no reranker and with each chain, per corpus."""
    from retrieval.rerank import rerankers_named

    chains = [tuple(n for n in chain.split(",") if n) for chain in args.rerank]
    for chain in chains:
        rerankers_named(chain)  # an unknown name fails before anything runs
    results: dict = {"seed": args.seed, "embedder": args.embedder, "chains": {}}
    for chain in [(), *chains]:
        name = ",".join(chain) or "none"
        print(f"  {name} ...", flush=True)
        results["chains"][name] = {
            "facts": kindmem_facts(dev, tenant, runs, args.modes, rerank=chain),
            "recall": kindmem_recall(dev, tenant, runs, args.modes, rerank=chain),
        }
    base = results["chains"]["none"]
    print(f"\nrerankers, seed {args.seed}: recall@10 (MRR), change against no reranker")
    print(
        f"  {'corpus':7} {'mode':9} {'reranker':14} {'R@10':>6} {'dR@10':>7} {'MRR':>6} {'dMRR':>7}"
    )
    for corpus in ("facts", "recall"):
        for mode in args.modes:
            for name, table in results["chains"].items():
                e, b = table[corpus][mode], base[corpus][mode]
                print(
                    f"  {corpus:7} {mode:9} {name:14} {e['recall@10']:>6}"
                    f" {e['recall@10'] - b['recall@10']:>+7.3f} {e['mrr']:>6}"
                    f" {e['mrr'] - b['mrr']:>+7.3f}"
                )
    out = ROOT / "results" / f"rerank-seed{args.seed}-{args.embedder}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT.parent)}")


def run_readers(dev: DevSet, tenant: Tenant) -> dict:
    """A run for each person (its participant), as an agent would search: their readers."""
    from kindmem.models import ApiKey, Project
    from tests import factories

    project = Project.objects.get(tenant=tenant, name="devset")
    app = factories.app_key_create(tenant, [project])
    assert ApiKey.objects.filter(pk=app.key.pk).exists()
    out = {}
    for person in sorted({q.person for q in dev.questions}):
        minted = factories.run_create(
            app, project, participant_id=person, thread_id=f"bench-{uuid.uuid4()}"
        )
        out[person] = readers_for(minted.principal)
    return out


if __name__ == "__main__":
    main()
