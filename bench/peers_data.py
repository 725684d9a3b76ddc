"""The data bench/peers.py compares kindmem and a plain pgvector table on: the corpus (its
users' facts and their vectors), loaded into each side, and the writes a run added, forgotten.
Imported after `django.setup()`."""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from django.conf import settings
from django.db import connection
from pgvector.psycopg import register_vector

from bench import search_corpus as corpus
from bench._database import vector_text

PLAIN_TABLE = "bench_plain_memory"
WRITER_PREFIX = "writer-"
WRITER = WRITER_PREFIX + "%"  # LIKE: the facts the write figures added


def user_name(user: int) -> str:
    return f"user-{user:03d}"


def generate(users: int, per_user: int, seed: int) -> list[tuple[int, str, str]]:
    """(user, fact text, question about it), `per_user` facts for each user, one person each."""
    rng = random.Random(seed)
    rows = []
    for user in range(users):
        person = random.Random(f"peers:{seed}:{user}")
        name = f"{person.choice(corpus.FIRST)} {person.choice(corpus.LAST)}"
        for _ in range(per_user):
            text, _keyword, question, _kind = rng.choice(corpus.TEMPLATES)
            slots = {
                "name": name,
                "drink": rng.choice(corpus.DRINKS),
                "time": rng.choice(corpus.TIMES),
                "allergen": rng.choice(corpus.ALLERGENS),
                "city": rng.choice(corpus.CITIES),
                "language": rng.choice(corpus.LANGUAGES),
                "project": rng.choice(corpus.PROJECTS),
                "role": rng.choice(corpus.ROLES),
                "food": rng.choice(corpus.FOODS),
                "food2": rng.choice(corpus.FOODS),
                "channel": rng.choice(corpus.CHANNELS),
                "hour": rng.randint(8, 20),
                "hobby": rng.choice(corpus.HOBBIES),
                "seat": rng.choice(corpus.SEATS),
                "color": rng.choice(corpus.COLORS),
                "vehicle": rng.choice(corpus.VEHICLES),
                "month": rng.choice(corpus.MONTHS),
                "invoice": f"INV-{rng.randint(10000, 99999)}",
            }
            rows.append((user, text.format(**slots), question.format(**slots)))
    return rows


def corpus_vectors(texts: list[str], embedder: Any, tag: str) -> np.ndarray:
    """The corpus's vectors, embedded once per embedder and cached under the data folder."""
    folder = Path(settings.DATA_DIR) / "bench" / "peers"
    folder.mkdir(parents=True, exist_ok=True)
    digest = uuid.uuid5(uuid.NAMESPACE_URL, "\n".join(texts)).hex[:12]
    path = folder / f"corpus-{len(texts)}-{digest}-{tag}.npy"
    if path.exists():
        return np.load(path)
    started = time.monotonic()
    out: list[list[float]] = []
    for start in range(0, len(texts), 256):
        out.extend(embedder.embed(texts[start : start + 256]))
        print(f"  embedded {len(out)}/{len(texts)}", end="\r", flush=True)
    vectors = np.asarray(out, dtype=np.float32)
    np.save(path, vectors)
    print(f"  embedded {len(texts)} texts in {time.monotonic() - started:.0f} s", flush=True)
    return vectors


# ---- the database ------------------------------------------------------------------------------


def plain_connect() -> psycopg.Connection:
    """The plain application's connection: the tables' owner, autocommit, pgvector adapted."""
    params = connection.get_connection_params()
    plain = psycopg.connect(
        dbname=params["dbname"],
        user=params["user"],
        host=params.get("host"),
        port=params.get("port"),
        autocommit=True,
    )
    register_vector(plain)
    return plain


def load_plain(plain: psycopg.Connection, rows: list, vectors: np.ndarray) -> float:
    """The plain table, its rows and its two indexes; returns the load's seconds."""
    started = time.perf_counter()
    plain.execute("DROP TABLE IF EXISTS bench_plain_memory")
    plain.execute(
        "CREATE TABLE bench_plain_memory (id bigserial PRIMARY KEY, user_id text NOT NULL,"
        " content text NOT NULL, embedding vector(384) NOT NULL)"
    )
    with (
        plain.cursor() as cursor,
        cursor.copy("COPY bench_plain_memory (user_id, content, embedding) FROM STDIN") as copy,
    ):
        for (user, text, _), v in zip(rows, vectors, strict=True):
            copy.write_row((user_name(user), text, vector_text(v, 7)))
    plain.execute("SET maintenance_work_mem = '512MB'")
    plain.execute(
        "CREATE INDEX bench_plain_memory_hnsw ON bench_plain_memory"
        " USING hnsw (embedding vector_cosine_ops)"
    )
    plain.execute("CREATE INDEX bench_plain_memory_user ON bench_plain_memory (user_id)")
    plain.execute("VACUUM ANALYZE bench_plain_memory")
    return time.perf_counter() - started


def load_kindmem(rows: list, vectors: np.ndarray, model: str) -> float:
    """One tenant, org, project and agent; the facts by COPY as the write path writes them (a
    fact, its first revision embedded, its subject: the participant)."""
    from facts.provenance import content_hash
    from tests import factories

    started = time.perf_counter()
    tenant = factories.tenant_create("peers")
    org = factories.org_create(tenant, "peers-org")
    project = factories.project_create(tenant, org, name="peers-project")
    factories.agent_create(tenant, agent_id="peers-agent")
    # The vector and text indexes are rebuilt after the load, as migrated (a COPY into them
    # would insert into the HNSW graph row by row, several times slower).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'facts_revision'"
            " AND (indexdef LIKE '%%USING hnsw%%' OR indexdef LIKE '%%USING gin%%')"
        )
        rebuilt = cursor.fetchall()
        for name, _ in rebuilt:
            cursor.execute(f'DROP INDEX "{name}"')
    created = "2026-01-01 00:00:00+00"
    rng = random.Random(5)
    fact_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in rows]
    revision_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in rows]
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY facts_fact (id, tenant_id, type, org_id, project_id, participant_id, tags,"
            " created_at) FROM STDIN"
        ) as copy:
            for fid, (user, _, _) in zip(fact_ids, rows, strict=True):
                copy.write_row(
                    (fid, tenant.id, "note", org.id, project.id, user_name(user), "{}", created)
                )
        with cursor.cursor.copy(
            "COPY facts_revision (id, tenant_id, fact_id, version, content, content_hash, trust,"
            " attributed_kind, attributed_id, created_at, legal_hold, caused_by_log_id,"
            " search_text, embedding, embedding_model, embedding_state) FROM STDIN"
        ) as copy:
            for rid, fid, (_, text, _), v in zip(
                revision_ids, fact_ids, rows, vectors, strict=True
            ):
                copy.write_row(
                    (
                        rid,
                        tenant.id,
                        fid,
                        1,
                        json.dumps(text),
                        content_hash(text, None, None),
                        "asserted",
                        "service",
                        "bench",
                        created,
                        False,
                        "{}",
                        text,
                        vector_text(v, 7),
                        model,
                        "done",
                    )
                )
        with cursor.cursor.copy(
            "COPY facts_subject (tenant_id, revision_id, fact_id, kind, subject_id) FROM STDIN"
        ) as copy:
            for rid, fid, (user, _, _) in zip(revision_ids, fact_ids, rows, strict=True):
                copy.write_row((tenant.id, rid, fid, "participant", user_name(user)))
        cursor.execute("SET maintenance_work_mem = '512MB'")
        for _, definition in rebuilt:
            cursor.execute(definition)
        for table in ("facts_fact", "facts_revision", "facts_subject"):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("ANALYZE")
    return time.perf_counter() - started


def is_loaded(plain: psycopg.Connection, n: int) -> bool:
    from facts.models import Revision

    exists = plain.execute("SELECT to_regclass(%s) IS NOT NULL", [PLAIN_TABLE]).fetchone()[0]
    if not exists:
        return False
    corpus_rows = "SELECT count(*) FROM bench_plain_memory WHERE user_id NOT LIKE %s"
    if plain.execute(corpus_rows, [WRITER]).fetchone()[0] != n:
        return False
    ours = Revision.objects.exclude(fact__participant_id__startswith=WRITER_PREFIX)
    return ours.count() == n


def forget_writes(plain: psycopg.Connection) -> None:
    """Drop what an earlier run's write figures added, so every run starts from the corpus."""
    plain.execute("DELETE FROM bench_plain_memory WHERE user_id LIKE %s", [WRITER])
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM facts_subject WHERE fact_id IN"
            " (SELECT id FROM facts_fact WHERE participant_id LIKE %s)",
            [WRITER],
        )
        cursor.execute(
            "DELETE FROM facts_revision WHERE fact_id IN"
            " (SELECT id FROM facts_fact WHERE participant_id LIKE %s)",
            [WRITER],
        )
        cursor.execute("DELETE FROM facts_fact WHERE participant_id LIKE %s", [WRITER])
        cursor.execute("DELETE FROM audit_auditevent")
        cursor.execute("DELETE FROM kindmem_cache")
    plain.execute("VACUUM ANALYZE bench_plain_memory")
    with connection.cursor() as cursor:
        for table in ("facts_fact", "facts_revision", "facts_subject", "audit_auditevent"):
            cursor.execute(f"VACUUM ANALYZE {table}")
