"""What bench/retrieval_quality.py holds kindmem's retrieval to: the questions' settings (the
agent, the modes and roles, the top K), the scores every retriever is given (recall@10, MRR),
and the plain baselines (BM25 over PostgreSQL's lexemes, dense cosine, their reciprocal rank
fusion, per person). Imported after `django.setup()`."""

from __future__ import annotations

import hashlib
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np
from django.db import connection

from bench.devset import DevSet

AGENT = "companion"
K = 10
RRF_K = 60
MODES = ("keyword", "semantic", "hybrid")
ROLES = ("user", "agent")


def lexemes_of(texts: list[str]) -> list[dict[str, int]]:
    """Each text's PostgreSQL lexemes (english) with their counts: what the index holds."""
    out = []
    with connection.cursor() as cursor:
        for start in range(0, len(texts), 500):
            chunk = texts[start : start + 500]
            cursor.execute(
                "SELECT t.i, u.lexeme, coalesce(array_length(u.positions, 1), 1)"
                " FROM unnest(%s::text[]) WITH ORDINALITY AS t(text, i),"
                " LATERAL unnest(to_tsvector('english', t.text)) AS u",
                [chunk],
            )
            found: dict[int, dict[str, int]] = defaultdict(dict)
            for i, lexeme, count in cursor.fetchall():
                found[i - 1][lexeme] = count
            out.extend(found[i] for i in range(len(chunk)))
    return out


class BM25:
    """Plain Okapi BM25 over one person's documents (k1 1.2, b 0.75)."""

    def __init__(
        self, docs: list[dict[str, int]], ids: list[str], k1: float = 1.2, b: float = 0.75
    ) -> None:
        self.docs, self.k1, self.b = docs, k1, b
        # Ties in an order unrelated to the set's: the generator writes a person's events
        # before their notes, so breaking ties by position would favour the evidence.
        self.tiebreak = [hashlib.sha256(i.encode()).hexdigest() for i in ids]
        self.avgdl = statistics.mean(sum(d.values()) for d in docs) or 1.0
        df = Counter(term for d in docs for term in d)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def rank(self, query: dict[str, int]) -> list[int]:
        scores = []
        for i, d in enumerate(self.docs):
            dl = sum(d.values())
            s = 0.0
            for term in query:
                tf = d.get(term)
                if tf:
                    norm = tf + self.k1 * (1 - self.b + self.b * dl / self.avgdl)
                    s += self.idf[term] * tf * (self.k1 + 1) / norm
            if s > 0:
                scores.append((-s, self.tiebreak[i], i))
        return [i for _, _, i in sorted(scores)]


def rrf(*lists: list[int], k: int = RRF_K) -> list[int]:
    score: dict[int, float] = defaultdict(float)
    for ranked in lists:
        for r, i in enumerate(ranked, start=1):
            score[i] += 1 / (k + r)
    return sorted(score, key=lambda i: -score[i])


def scored(ranked: list[str], evidence: Sequence[str]) -> tuple[float, float]:
    top = ranked[:K]
    recall = sum(1 for e in evidence if e in top) / len(evidence)
    first = next((r for r, doc in enumerate(top, start=1) if doc in evidence), None)
    return recall, (1 / first if first else 0.0)


def summarise(rows: list[tuple[str, float, float]]) -> dict:
    """rows: (style, recall, rr) per question -> means overall and per style."""
    out = {
        "recall@10": round(statistics.mean(r for _, r, _ in rows), 3),
        "mrr": round(statistics.mean(m for _, _, m in rows), 3),
        "empty": 0,
    }
    for style in sorted({s for s, _, _ in rows}):
        out[style] = round(statistics.mean(r for s, r, _ in rows if s == style), 3)
    return out


def baselines(
    dev: DevSet,
    docs: list[tuple[str, str]],  # (id, person)
    doc_lexemes: list[dict[str, int]],
    doc_vectors: np.ndarray,
    evidence_of: Callable,
    q_lexemes: list[dict[str, int]],
    q_vectors: np.ndarray,
) -> dict[str, dict]:
    by_person: dict[str, list[int]] = defaultdict(list)
    for i, (_, person) in enumerate(docs):
        by_person[person].append(i)
    bm25 = {
        p: BM25([doc_lexemes[i] for i in idx], [docs[i][0] for i in idx])
        for p, idx in by_person.items()
    }
    rows: dict[str, list] = defaultdict(list)
    for qi, q in enumerate(dev.questions):
        idx = by_person[q.person]
        kw = [idx[i] for i in bm25[q.person].rank(q_lexemes[qi])]
        sims = doc_vectors[idx] @ q_vectors[qi]
        dense = [idx[i] for i in np.argsort(-sims, kind="stable")]
        for name, ranked in (("bm25", kw), ("dense", dense), ("rrf", rrf(kw, dense))):
            rows[name].append((q.style, *scored([docs[i][0] for i in ranked], evidence_of(q))))
    return {f"plain {name}": summarise(r) for name, r in rows.items()}
