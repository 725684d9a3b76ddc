"""Recall at scale: load N messages, then time list / keyword / semantic recall per reader.

    .venv/bin/python bench/recall.py                      # 1,000,000 messages (the target)
    .venv/bin/python bench/recall.py --messages 100000    # a smaller machine

It uses its own database (`kindmem_bench`, kept between runs; `--fresh` reloads) on the
configured server. Messages are written with COPY (indexes dropped and rebuilt, the build
timed), vectors from the deterministic hashing embedder. Figures printed:

- load: rows/s of the COPY, and the GIN and HNSW build times;
- append: p50/p95 of one `conversation_append` (one message, embedded, row lock, sequence);
- recall: p50/p95/p99 latency of `recall_search` per mode (list, keyword, semantic) for a broad
  reader (an app: every end user of the project) and a narrow one (a run: one end user),
  top_k=10, with the guard, holds and selection in the query;
- semantic quality: recall@10 of the HNSW (iterative scan) answer against the exact answer
  (index scans off), for the broad reader.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench._timing import percentiles_ms  # noqa: E402
from embeddings.providers import DIMENSIONS, HashingEmbedder  # noqa: E402
from kindmem.access import Readers, readers_for  # noqa: E402
from kindmem.models import ApiKey  # noqa: E402
from kindmem.row_security import tenant_context  # noqa: E402
from recall.models import Conversation, Message  # noqa: E402
from recall.search import RecallQuery, Selection, recall_search  # noqa: E402

MESSAGES_PER_CONVERSATION = 20
CONVERSATIONS_PER_PARTICIPANT = 10
VOCABULARY = 5000
WORDS_PER_MESSAGE = 10
REBUILT_INDEXES = ("message_search_gin", "message_embedding_hnsw")


def words() -> list[str]:
    return [f"w{n}" for n in range(VOCABULARY)]


def word_vector_cells(vocab: list[str]) -> dict[str, tuple[int, float]]:
    """Each word's one cell of the hashing embedder (index, sign): a message's vector is the
    normalised sum of its words' cells, exactly what HashingEmbedder computes."""
    embedder = HashingEmbedder()
    cells = {}
    for word in vocab:
        vector = embedder.embed([word])[0]
        index = max(range(DIMENSIONS), key=lambda i: abs(vector[i]))
        cells[word] = (index, 1.0 if vector[index] > 0 else -1.0)
    return cells


def vector_literal(text_words: list[str], cells: dict[str, tuple[int, float]]) -> str:
    sums: dict[int, float] = {}
    for w in text_words:
        i, s = cells[w]
        sums[i] = sums.get(i, 0.0) + s
    norm = sum(v * v for v in sums.values()) ** 0.5 or 1.0
    out = ["0"] * DIMENSIONS
    for i, v in sums.items():
        out[i] = f"{v / norm:.5f}"
    return "[" + ",".join(out) + "]"


def load(n_messages: int, work_mem: str) -> dict[str, float]:
    from tests import factories

    rng = random.Random(42)
    tenant = factories.tenant_create("bench")
    project = factories.project_create(tenant)
    agent = factories.agent_create(tenant)
    factories.app_key_create(tenant, [project])
    vocab = words()
    # Zipf-like, as words are (cumulative once: choices() would re-add 5,000 weights per call)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(VOCABULARY)))
    cells = word_vector_cells(vocab)
    n_conversations = max(1, n_messages // MESSAGES_PER_CONVERSATION)
    conversations = [
        Conversation(
            tenant=tenant,
            thread_id=f"conv-{c}",
            agent=agent,
            project=project,
            participant_id=f"cust-{c // CONVERSATIONS_PER_PARTICIPANT}",
            segments=[f"seg-{c % 50}"],
            last_sequence=MESSAGES_PER_CONVERSATION,
        )
        for c in range(n_conversations)
    ]
    Conversation.objects.bulk_create(conversations, batch_size=5000)
    figures = {}
    with connection.cursor() as cursor:
        for name in REBUILT_INDEXES:
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
    started = time.perf_counter()
    model = HashingEmbedder.model
    columns = (
        "tenant_id, conversation_id, sequence, role, text, created_at, embedding, embedding_model"
    )
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY recall_message ({columns}) FROM STDIN") as copy,
    ):
        base = time.time() - n_messages
        for c, conversation in enumerate(conversations):
            for s in range(1, MESSAGES_PER_CONVERSATION + 1):
                n = c * MESSAGES_PER_CONVERSATION + s
                role = "tool" if s % 5 == 0 else ("user" if s % 2 else "agent")
                text_words = rng.choices(vocab, cum_weights=cumulative, k=WORDS_PER_MESSAGE)
                text = " ".join(text_words)
                created = time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(base + n))
                vector = None if role == "tool" else vector_literal(text_words, cells)
                copy.write_row(
                    (
                        tenant.id,
                        conversation.id,
                        s,
                        role,
                        text,
                        created,
                        vector,
                        model if vector else "",
                    )
                )
    figures["copy rows/s"] = (
        n_conversations * MESSAGES_PER_CONVERSATION / (time.perf_counter() - started)
    )
    with connection.cursor() as cursor:
        # 1M x 384 floats outgrow 1 GB: the HNSW build then spills and takes many times longer
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [work_mem])
        t = time.perf_counter()
        cursor.execute('CREATE INDEX "message_search_gin" ON recall_message USING gin (search)')
        figures["GIN build s"] = time.perf_counter() - t
        t = time.perf_counter()
        cursor.execute(
            'CREATE INDEX "message_embedding_hnsw" ON recall_message USING hnsw '
            "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        figures["HNSW build s"] = time.perf_counter() - t
        cursor.execute("ANALYZE")  # as autovacuum would, every table the recall query joins
    return figures


def percentiles(samples: list[float]) -> str:
    p = percentiles_ms(samples)
    return f"p50 {p[50]:7.1f} ms  p95 {p[95]:7.1f} ms  p99 {p[99]:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the index builds")
    parser.add_argument("--build-workers", type=int, default=0, help="parallel index builders")
    args = parser.parse_args()
    settings.EMBEDDER = "hashing"
    use_bench_database(
        "kindmem_bench", fresh=args.fresh, niceness=19, build_workers=args.build_workers
    )
    from tests import factories

    if not Message.objects.exists():
        print(f"loading {args.messages:,} messages ...", flush=True)
        for name, value in load(args.messages, args.maintenance_work_mem).items():
            print(f"  {name:14} {value:12,.1f}")
    total = Message.objects.count()
    print(f"messages: {total:,}")
    app_key = ApiKey.objects.filter(kind="app").first()
    app = factories.Keyed(app_key, "")
    project = app_key.projects.first()
    # as production's web process runs it: the app role, confined to the tenant by row security
    with tenant_context(project.tenant_id):
        measure(args, app, project, total)


def measure(args: argparse.Namespace, app: Any, project: Any, total: int) -> None:
    rng = random.Random(7)
    vocab = words()

    # append latency: one message at a time, embedded, into fresh conversations
    from recall import services

    samples = []
    for i in range(args.queries):
        started = time.perf_counter()
        services.conversation_append(
            principal=app.principal,
            conversation_id=f"bench-append-{time.time_ns()}-{i}",
            messages=[services.NewMessage("user", " ".join(rng.choices(vocab[:500], k=10)))],
            start=services.ConversationStart(
                agent_id="support-bot", project_id=project.id, participant_id="cust-append"
            ),
        )
        samples.append(time.perf_counter() - started)
    print(f"append (1 message)            {percentiles(samples)}")

    n_participants = max(1, total // (MESSAGES_PER_CONVERSATION * CONVERSATIONS_PER_PARTICIPANT))
    app_readers = readers_for(app.principal)

    def run_readers() -> Readers:
        participant = f"cust-{rng.randrange(n_participants)}"
        return Readers(
            project_ids=frozenset({str(project.id)}),
            participant_ids=frozenset({participant}),
            thread_ids=frozenset({"new-thread"}),
        )

    selection = [Selection(agent_id="support-bot")]
    for mode in ("list", "keyword", "semantic"):
        for reader_name in ("app", "run"):
            samples = []
            for _ in range(args.queries):
                readers = app_readers if reader_name == "app" else run_readers()
                query = None if mode == "list" else " ".join(rng.choices(vocab[:300], k=2))
                started = time.perf_counter()
                hits = recall_search(
                    request=RecallQuery(
                        tenant_id=project.tenant_id,
                        readers=readers,
                        selections=selection,
                        mode=mode,
                        top_k=10,
                        roles=("user", "agent"),
                        query=query,
                    )
                )
                samples.append(time.perf_counter() - started)
                assert mode == "keyword" or reader_name == "run" or len(hits) == 10
            print(f"{mode:8} {reader_name:3} top_k=10          {percentiles(samples)}")

    # semantic quality: the index's answer against the exact one
    overlaps = []
    for _ in range(min(args.queries, 20)):
        query = " ".join(rng.choices(vocab[:300], k=3))
        request = RecallQuery(
            tenant_id=project.tenant_id,
            readers=app_readers,
            selections=selection,
            mode="semantic",
            top_k=10,
            roles=("user", "agent"),
            query=query,
        )
        approximate = [h.score for h in recall_search(request=request)]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
            exact = [h.score for h in recall_search(request=request)]
        # Many messages tie on score (a bag of words), so ids are ambiguous: a hit counts when
        # it is as near as the exact answer's 10th.
        overlaps.append(sum(1 for a in approximate if a >= exact[-1] - 1e-6) / len(exact))
    print(f"semantic recall@10 (HNSW vs exact, app): {statistics.mean(overlaps):.2f}")


if __name__ == "__main__":
    main()
