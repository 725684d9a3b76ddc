"""The corpus bench/search.py searches, loaded: tenants, projects and keys through the
factories, facts, revisions and subjects by COPY with the search indexes dropped and rebuilt
after (`REBUILT`); and the sizes of those indexes. Imported after `django.setup()`."""

from __future__ import annotations

import json
import random
import time
import uuid

import numpy as np
from django.db import connection

from bench._database import vector_text
from bench.search_corpus import Row

REBUILT = {
    "revision_search_gin": "CREATE INDEX revision_search_gin ON facts_revision USING gin "
    "(search_vector)",
    "revision_embedding_hnsw": "CREATE INDEX revision_embedding_hnsw ON facts_revision USING "
    "hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)",
}


def load(rows: list[Row], vectors: np.ndarray | None, model: str) -> dict[str, float]:
    """Tenants, projects and keys through the factories; facts, revisions and subjects by COPY.
    Without `vectors` (a keyword-only corpus) the revisions carry no embedding and no HNSW
    index is built."""
    from tests import factories

    rng = random.Random(11)
    tenants = []
    for t in range(max(r.tenant for r in rows) + 1):
        tenant = factories.tenant_create(f"bench-{t}")
        org = factories.org_create(tenant)
        projects = [
            factories.project_create(tenant, org, name=f"p{p}")
            for p in range(max(r.project for r in rows) + 1)
        ]
        factories.agent_create(tenant)
        factories.admin_key_create(tenant)
        tenants.append((tenant, org, projects))
    figures: dict[str, float] = {}
    with connection.cursor() as cursor:
        for name in REBUILT:
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
    started = time.perf_counter()
    created = "2026-01-01 00:00:00+00"
    fact_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in rows]
    revision_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in rows]
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY facts_fact (id, tenant_id, type, org_id, project_id, participant_id, tags,"
            " created_at) FROM STDIN"
        ) as copy:
            for fid, r in zip(fact_ids, rows, strict=True):
                tenant, org, projects = tenants[r.tenant]
                participant = None if r.participant is None else f"cust-{r.project}-{r.participant}"
                copy.write_row(
                    (
                        fid,
                        tenant.id,
                        r.type,
                        org.id,
                        projects[r.project].id,
                        participant,
                        "{" + r.type + "}",
                        created,
                    )
                )
        with cursor.cursor.copy(
            "COPY facts_revision (id, tenant_id, fact_id, version, content, content_hash, trust,"
            " attributed_kind, attributed_id, created_at, legal_hold, caused_by_log_id,"
            " search_text, embedding, embedding_model, embedding_state) FROM STDIN"
        ) as copy:
            unembedded = [None] * len(rows)
            embedded = unembedded if vectors is None else vectors
            for rid, fid, r, v in zip(revision_ids, fact_ids, rows, embedded, strict=True):
                copy.write_row(
                    (
                        rid,
                        tenants[r.tenant][0].id,
                        fid,
                        1,
                        json.dumps({"text": r.text}),
                        uuid.uuid4().hex,
                        "asserted",
                        "service",
                        "bench",
                        created,
                        False,
                        "{}",
                        r.text,
                        None if v is None else vector_text(v, 6),
                        None if v is None else model,
                        "pending" if v is None else "done",
                    )
                )
        with cursor.cursor.copy(
            "COPY facts_subject (tenant_id, revision_id, fact_id, kind, subject_id) FROM STDIN"
        ) as copy:
            for rid, fid, r in zip(revision_ids, fact_ids, rows, strict=True):
                if r.participant is not None:
                    copy.write_row(
                        (
                            tenants[r.tenant][0].id,
                            rid,
                            fid,
                            "participant",
                            f"cust-{r.project}-{r.participant}",
                        )
                    )
    figures["copy_rows_per_s"] = round(len(rows) / (time.perf_counter() - started), 1)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        for name, sql in REBUILT.items():
            if vectors is None and "hnsw" in name:
                continue
            t = time.perf_counter()
            cursor.execute(sql)
            figures[f"{name}_build_s"] = round(time.perf_counter() - t, 1)
        cursor.execute("VACUUM ANALYZE facts_fact")
        cursor.execute("VACUUM ANALYZE facts_revision")
        cursor.execute("VACUUM ANALYZE facts_subject")
        cursor.execute("ANALYZE")  # as autovacuum would: every table the guard joins (holds)
    return figures


def index_sizes() -> dict[str, float]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c"
            " WHERE c.relname IN ('revision_search_gin', 'revision_embedding_hnsw',"
            " 'facts_revision', 'facts_fact')"
        )
        return {name: round(size / 2**20, 1) for name, size in cursor.fetchall()}
