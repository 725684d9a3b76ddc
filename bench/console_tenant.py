"""The tenant bench/console_pages.py times the console in: `build` writes it (that script's
docstring says what it holds), `tenant_name` names it by its size. Imported after
`django.setup()`."""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from bench.search_corpus import Zipf, generate

DAYS = 90
PROJECTS = 10
MESSAGES_PER_PERSON = 20
AUDIT_EVENTS = 100_000
ACCESS_REQUESTS = 300
ERASURES = 100
REMEMBERED_SHARE = 0.05
SUPERSEDED_SHARE = 0.10
PENDING = 300  # the newest remembered memories still wait for review
VECTORS = 256  # distinct embeddings, cycled: their values do not matter here
HNSW = "revision_embedding_hnsw"


def tenant_name(facts: int, people: int) -> str:
    return f"bench-console-{facts}-{people}"


def build(facts: int, people: int, seed: int) -> None:
    """The tenant, its staff and its data (bench/console_pages.py's docstring)."""
    import numpy as np

    from approvals.models import Approval, ApprovalStatus
    from audit.models import AuditEvent
    from kindmem.models import Run
    from privacy.models import AccessRequest, ErasureRequest, RequestStatus
    from recall.models import Conversation, Message
    from tests import factories
    from tests.console.conftest import staff_create

    rng = random.Random(seed)
    started = time.perf_counter()
    tenant = factories.tenant_create(tenant_name(facts, people))
    org = factories.org_create(tenant)
    projects = [factories.project_create(tenant, org, name=f"project-{p}") for p in range(PROJECTS)]
    agent = factories.agent_create(tenant)
    app = factories.app_key_create(tenant, projects)
    world = argparse.Namespace(tenant=tenant)
    staff = {role: staff_create(world, "bench", role) for role in ("superuser", "officer")}
    reviewers = [staff_create(world, f"bench{i}", "reviewer") for i in range(3)]
    now = timezone.now()
    start = now - timedelta(days=DAYS)

    def when(i: int, n: int) -> object:
        """The i-th of n rows' time: spread over the period in order, with some jitter."""
        return start + timedelta(seconds=(i + rng.random()) * DAYS * 86400 / n)

    person = [f"person-{p:04d}" for p in range(people)]
    project_of = [projects[p % PROJECTS] for p in range(people)]
    runs = Run.objects.bulk_create(
        [
            Run(
                tenant=tenant,
                agent=agent,
                agent_version="1.0.0",
                project=project_of[p],
                participant_id=person[p],
                thread_id=f"thread-{p:04d}",
                minted_by=app.key,
                token_prefix=f"b{p:07d}{seed:03d}"[:16],
                token_hash=uuid.uuid4().hex,
                created_at=start,
                expires_at=start + timedelta(hours=1),
            )
            for p in range(people)
        ],
        batch_size=2000,
    )

    # facts, revisions, subjects: COPY, in time order
    corpus = generate(facts, seed)
    texts = [row.text for row in corpus]
    draw = Zipf(people, 1.0)
    owners = [draw.draw(rng) for _ in range(facts)]
    vectors = np.random.default_rng(seed).standard_normal((VECTORS, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vector_texts = ["[" + ",".join(f"{x:.5f}" for x in v) + "]" for v in vectors]
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX IF EXISTS "{HNSW}"')
    remembered: list[tuple[uuid.UUID, uuid.UUID, int, object]] = []  # revision, fact, person, at
    fact_rows, revision_rows, subject_rows = [], [], []
    for i in range(facts):
        at = when(i, facts)
        p = owners[i]
        fact_id, revision_id = uuid.uuid4(), uuid.uuid4()
        kind = rng.random()
        fact_rows.append(
            (fact_id, tenant.id, corpus[i].type, org.id, project_of[p].id, person[p], "{}", at)
        )
        base = {
            "tenant": tenant.id,
            "fact": fact_id,
            "text": texts[i],
            "vector": vector_texts[i % VECTORS],
            "at": at,
        }
        if kind < REMEMBERED_SHARE:
            revision_rows.append(
                _revision(
                    base,
                    revision_id,
                    1,
                    trust="unverified",
                    kind="agent",
                    by=f"run:{runs[p].id}",
                    run=runs[p].id,
                )
            )
            remembered.append((revision_id, fact_id, p, at))
        elif kind < REMEMBERED_SHARE + SUPERSEDED_SHARE:
            later = at + timedelta(hours=rng.randint(1, 48))
            first = uuid.uuid4()
            revision_rows.append(
                _revision(
                    base,
                    first,
                    1,
                    invalidated=(later, "superseded", f"app:{app.key.id}"),
                )
            )
            revision_rows.append(_revision({**base, "at": later}, revision_id, 2, supersedes=first))
            subject_rows.append((tenant.id, first, fact_id, "participant", person[p]))
        else:
            revision_rows.append(_revision(base, revision_id, 1))
        subject_rows.append((tenant.id, revision_id, fact_id, "participant", person[p]))
    revision_rows.sort(key=lambda r: r[9])  # by created_at, as they were written
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY facts_fact (id, tenant_id, type, org_id, project_id, participant_id, tags,"
            " created_at) FROM STDIN"
        ) as copy:
            for row in fact_rows:
                copy.write_row(row)
        with cursor.cursor.copy(
            "COPY facts_revision (id, tenant_id, fact_id, version, content, content_hash, trust,"
            " attributed_kind, attributed_id, created_at, legal_hold, caused_by_log_id,"
            " search_text, embedding, embedding_model, embedding_state, invalidated_at,"
            " invalidation_reason, invalidated_by, supersedes_id, review, generated_by_run_id,"
            " generated_by_tool_call_id, attributed_agent_version) FROM STDIN"
        ) as copy:
            for row in revision_rows:
                copy.write_row(row)
        with cursor.cursor.copy(
            "COPY facts_subject (tenant_id, revision_id, fact_id, kind, subject_id) FROM STDIN"
        ) as copy:
            for row in subject_rows:
                copy.write_row(row)
    print(f"  facts, revisions, subjects: {time.perf_counter() - started:.0f} s", flush=True)

    # approvals of the remembered ones: decided by three reviewers, the newest still pending
    approvals = []
    rejected, waiting = [], []
    for n, (revision_id, fact_id, p, at) in enumerate(remembered):
        pending = n >= len(remembered) - PENDING
        status = (
            ApprovalStatus.PENDING
            if pending
            else rng.choice(
                [ApprovalStatus.APPROVED] * 6
                + [ApprovalStatus.VERIFIED] * 2
                + [ApprovalStatus.REJECTED]
            )
        )
        reviewer = reviewers[n % 3]
        decided = None if pending else at + timedelta(hours=rng.randint(1, 30))
        if pending:
            waiting.append(revision_id)
        elif status == ApprovalStatus.REJECTED:
            rejected.append((revision_id, decided, f"user:{reviewer.pk}"))
        approvals.append(
            Approval(
                tenant=tenant,
                revision_id=revision_id,
                fact_id=fact_id,
                agent=agent,
                agent_version="1.0.0",
                project=project_of[p],
                run=runs[p],
                reasons=["instruction-like"],
                findings=[
                    {"reason": "instruction-like", "rule": "imperative", "start": 0, "end": 4}
                ],
                status=status,
                created_at=at,
                decided_at=decided,
                decided_by="" if pending else f"user:{reviewer.pk}",
                decided_by_user=None if pending else reviewer,
                note="injection" if status == ApprovalStatus.REJECTED else "",
            )
        )
    Approval.objects.bulk_create(approvals, batch_size=2000)
    from facts.models import Revision

    Revision.objects.filter(pk__in=waiting).update(review="pending")
    for revision_id, decided, by in rejected:
        Revision.objects.filter(pk=revision_id).update(
            review="pending",
            invalidated_at=decided,
            invalidation_reason="deleted",
            invalidated_by=by,
        )

    # a conversation per person
    conversations = Conversation.objects.bulk_create(
        [
            Conversation(
                tenant=tenant,
                thread_id=f"thread-{p:04d}",
                agent=agent,
                project=project_of[p],
                participant_id=person[p],
                last_sequence=MESSAGES_PER_PERSON,
                created_at=when(p, people),
            )
            for p in range(people)
        ],
        batch_size=2000,
    )
    Message.objects.bulk_create(
        [
            Message(
                tenant=tenant,
                conversation=conversation,
                sequence=s + 1,
                role="user" if s % 2 == 0 else "agent",
                text=texts[(c * MESSAGES_PER_PERSON + s) % len(texts)],
                created_at=conversation.created_at + timedelta(minutes=s),
                embedding_model="",
            )
            for c, conversation in enumerate(conversations)
            for s in range(MESSAGES_PER_PERSON)
        ],
        batch_size=5000,
    )

    # audit events: an app's reads of facts about people
    principal = app.principal.id
    AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                tenant=tenant,
                timestamp=when(i, AUDIT_EVENTS),
                phase="read",
                outcome="success",
                kind="fact",
                endpoint="GET facts",
                principal=principal,
                principal_kind="app",
                object_ids=[str(uuid.UUID(int=rng.getrandbits(128)))],
                subjects=[f"participant:{person[owners[i % facts]]}"],
                project_id=project_of[owners[i % facts]].id,
            )
            for i in range(AUDIT_EVENTS)
        ],
        batch_size=5000,
    )

    # privacy requests
    officer = f"staff:{staff['officer'].pk}"
    AccessRequest.objects.bulk_create(
        [
            AccessRequest(
                tenant=tenant,
                subject_kind="participant",
                subject_id=person[rng.randrange(people)],
                requested_by=officer,
                status=RequestStatus.COMPLETED,
                created_at=when(i, ACCESS_REQUESTS),
                finished_at=when(i, ACCESS_REQUESTS) + timedelta(minutes=2),
                export_json={"facts": [], "note": "built by the bench"},
            )
            for i in range(ACCESS_REQUESTS)
        ]
    )
    ErasureRequest.objects.bulk_create(
        [
            ErasureRequest(
                tenant=tenant,
                target_kind="participant",
                target_id=f"gone-{i:04d}",
                target_reference=uuid.uuid4().hex,
                reason="asked by email",
                requested_by=officer,
                status=RequestStatus.COMPLETED,
                created_at=when(i, ERASURES),
                started_at=when(i, ERASURES),
                finished_at=when(i, ERASURES) + timedelta(minutes=5),
                progress={"facts": {"done": 40}},
                total_estimate=40,
                receipt={"counts_by_kind": {"facts": 40, "messages": 20}},
            )
            for i in range(ERASURES)
        ]
    )
    print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)


def _revision(
    base: dict,
    revision_id: uuid.UUID,
    version: int,
    *,
    trust: str = "asserted",
    kind: str = "service",
    by: str = "app",
    run: uuid.UUID | None = None,
    invalidated: tuple | None = None,
    supersedes: uuid.UUID | None = None,
) -> tuple:
    at, reason, invalidated_by = invalidated or (None, None, None)
    return (
        revision_id,
        base["tenant"],
        base["fact"],
        version,
        json.dumps({"text": base["text"]}),
        uuid.uuid4().hex,
        trust,
        kind,
        by,
        base["at"],
        False,
        "{}",
        base["text"],
        base["vector"],
        "bench",
        "done",
        at,
        reason,
        invalidated_by,
        supersedes,
        None,
        run,
        f"call-{revision_id.hex[:12]}" if run else None,
        "1.0.0" if run else None,
    )
