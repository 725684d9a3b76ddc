"""Console pages at scale: every page staff open, timed in a tenant of 100,000 facts about 1,000
people.

    .venv/bin/python bench/console_pages.py                 # builds the tenant once, then times
    .venv/bin/python bench/console_pages.py --runs 60 --only front
    .venv/bin/python bench/console_pages.py --fresh         # rebuild the database

Builds, in its own database (`kindmem_bench_console`, kept between runs), one tenant as a busy
one would look after three months: `--facts` facts (texts from bench/search_corpus.py) about
`--people` participants (Zipf-distributed, so a few people have thousands of facts), one
revision each and a superseded one for a tenth, with their subjects and an embedding; 5% of
them remembered by agents in runs and reviewed (an approval each: most decided by three
reviewers, the newest still waiting); a conversation of 20 messages per person; 100,000 audit
events (reads about people); access requests and finished erasures. Everything is written in
insertion order by time, as a live tenant's rows are, and created over the last 90 days.
Facts, revisions and subjects go in by COPY, the rest by `bulk_create`. The HNSW index is
dropped for the load and not rebuilt: no console page reads it.

Then it signs in a reviewer, a privacy officer and an admin (a superuser of the tenant) with
Django's test client, which runs the whole request in this process (middleware, row security
as the app role, templates), and times each page `--runs` times after a warm-up, printing p50
and p95 per page and the page's query count (`--slowest N`: each page's N slowest statements
too). The admin's front page asks the broker whether it answers, so the embedded broker runs
(started here unless one answers). The person pages are of a typical person (~30 facts) and
of the busiest (Zipf's head: ~13,000 facts, 13% of the tenant). The machine is shared: the
load average is printed before and after; compare runs, not single figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.search_corpus import Zipf, generate  # noqa: E402

DATABASE = "kindmem_bench_console"
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


def use_bench_database(fresh: bool) -> None:
    connection.settings_dict["TEST"]["NAME"] = DATABASE
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=not fresh)
    with connection.cursor() as cursor:
        # a shared machine: the load and the index builds yield to everyone else's work
        cursor.execute("SELECT pg_backend_pid()")
        os.setpriority(os.PRIO_PROCESS, cursor.fetchone()[0], 10)


def tenant_name(facts: int, people: int) -> str:
    return f"bench-console-{facts}-{people}"


def build(facts: int, people: int, seed: int) -> None:
    """The tenant, its staff and its data (see the module docstring)."""
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
    for n, (revision_id, _fact_id, p, at) in enumerate(remembered):
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


def pages(tenant: object) -> list[tuple[str, str, str]]:
    """(name, role, url) of every page to time."""
    from approvals.models import Approval
    from facts.models import Fact
    from privacy.models import AccessRequest, ErasureRequest

    # the person with the most facts (Zipf: the first), and one of the many with few
    busiest, typical = "person-0000", "person-0500"
    fact = Fact.objects.filter(tenant=tenant, participant_id=typical).order_by("pk").first()
    pending = Approval.objects.filter(tenant=tenant, status="pending").order_by("pk").first()
    erasure = ErasureRequest.objects.filter(tenant=tenant).order_by("-created_at").first()
    access = AccessRequest.objects.filter(tenant=tenant).order_by("-created_at").first()
    person = reverse("admin:privacy_person")
    return [
        ("front page, reviewer", "reviewer", reverse("admin:index")),
        ("front page, privacy officer", "officer", reverse("admin:index")),
        ("front page, admin", "superuser", reverse("admin:index")),
        ("review queue", "reviewer", reverse("admin:approvals_approval_changelist")),
        (
            "review queue, all statuses",
            "reviewer",
            reverse("admin:approvals_approval_changelist") + "?status=all",
        ),
        (
            "approval page",
            "reviewer",
            reverse("admin:approvals_approval_change", args=[pending.pk]),
        ),
        ("facts list", "reviewer", reverse("admin:facts_fact_changelist")),
        (
            "facts list, by type",
            "reviewer",
            reverse("admin:facts_fact_changelist") + "?type=preference",
        ),
        ("fact page", "reviewer", reverse("admin:facts_fact_change", args=[fact.pk])),
        ("revisions list", "superuser", reverse("admin:facts_revision_changelist")),
        ("subjects list", "superuser", reverse("admin:facts_subject_changelist")),
        ("messages list", "superuser", reverse("admin:recall_message_changelist")),
        ("audit events list", "superuser", reverse("admin:audit_auditevent_changelist")),
        ("person page, typical", "officer", f"{person}?subject=participant:{typical}"),
        ("person page, busiest", "officer", f"{person}?subject=participant:{busiest}"),
        ("person page, reviewer", "reviewer", f"{person}?subject=participant:{typical}"),
        ("person search, id", "officer", f"{person}?q={typical}"),
        ("person search, words", "officer", f"{person}?q=green+tea"),
        ("access requests", "officer", reverse("admin:privacy_accessrequest_changelist")),
        (
            "access request page",
            "officer",
            reverse("admin:privacy_accessrequest_change", args=[access.pk]),
        ),
        ("new access request", "officer", reverse("admin:privacy_accessrequest_start")),
        ("erasures", "officer", reverse("admin:privacy_erasurerequest_changelist")),
        (
            "erasure status",
            "officer",
            reverse("admin:privacy_erasurerequest_status", args=[erasure.pk]),
        ),
        ("start an erasure", "officer", reverse("admin:privacy_erasurerequest_start")),
        (
            "was this id erased?",
            "officer",
            reverse("admin:privacy_erasurerequest_lookup")
            + "?target_kind=participant&target_id=gone-0001",
        ),
    ]


def broker_up() -> object:
    """The admin's front page asks the broker whether it answers, as a deployment has one:
    the embedded broker of this checkout (as `kindmem run` starts it), unless one answers.
    Returns the process started, if any."""
    from config import broker
    from config.celery import app

    url = settings.CELERY_BROKER_URL
    if not broker.is_embedded_url(url) or broker.answers(url):
        return None
    data_dir = settings.DATA_DIR / "bench-broker"
    settings.CELERY_BROKER_URL = app.conf.broker_url = broker.embedded_broker_url(data_dir)
    if broker.answers(settings.CELERY_BROKER_URL):
        return None
    return broker.broker_start(data_dir=data_dir)


def pct(samples: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return q[49], q[94]


def print_slowest(client: Client, url: str, n: int) -> None:
    """The page's n slowest statements, in ms, from one more request."""
    timed: list[tuple[float, str]] = []

    def timer(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timed.append(((time.perf_counter() - t) * 1000, sql))

    with connection.execute_wrapper(timer):
        client.get(url)
    for ms, sql in sorted(timed, reverse=True)[:n]:
        print(f"      {ms:7.1f}  {sql[:400]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--people", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="time only the pages whose name has this")
    parser.add_argument("--fresh", action="store_true", help="drop and rebuild the database")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--slowest", type=int, default=0, help="print each page's N slowest statements"
    )
    args = parser.parse_args()

    from kindmem.models import Tenant, User

    settings.ALLOWED_HOSTS = ["testserver"]
    use_bench_database(args.fresh)
    name = tenant_name(args.facts, args.people)
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        print(f"building {name} ...", flush=True)
        with transaction.atomic():  # all or nothing: a failed build leaves no tenant behind
            build(args.facts, args.people, args.seed)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # as autovacuum would have, in a live database
        tenant = Tenant.objects.get(name=name)
    clients = {}
    for role, username in (
        ("reviewer", "reviewer-bench0"),
        ("officer", "officer-bench"),
        ("superuser", "superuser-bench"),
    ):
        clients[role] = Client()
        clients[role].force_login(User.objects.get(tenant=tenant, username=username))

    started_broker = broker_up()
    try:
        results = measure(args, clients, tenant)
    finally:
        if started_broker is not None:
            started_broker.terminate()
            started_broker.wait(timeout=30)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def measure(args: argparse.Namespace, clients: dict[str, Client], tenant: object) -> dict:
    results: dict = {"load_average_before": os.getloadavg()}
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(f"{'page':34} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8}", flush=True)
    for page, role, url in pages(tenant):
        if args.only and args.only not in page:
            continue
        client = clients[role]
        for _ in range(args.warmup):
            response = client.get(url)
            assert response.status_code == 200, (page, url, response.status_code)
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        queries = len(captured)  # now: the next request clears Django's query log
        samples = []
        for _ in range(args.runs):
            t = time.perf_counter()
            response = client.get(url)
            samples.append(time.perf_counter() - t)
            assert response.status_code == 200, (page, url, response.status_code)
        p50, p95 = pct(samples)
        if args.slowest:
            print_slowest(client, url, args.slowest)
        results[page] = {"url": url, "queries": queries, "p50_ms": p50, "p95_ms": p95}
        flag = "  over 300 ms" if p95 > 300 else ""
        print(f"{page:34} {queries:>7} {p50:>8.1f} {p95:>8.1f}{flag}", flush=True)
    results["load_average_after"] = os.getloadavg()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return results


if __name__ == "__main__":
    main()
