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
as the app role, templates), with the web process's collector settings (config/collector.py),
and times each page `--runs` times after a warm-up, printing p50
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
import sys
import time
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

from bench._database import use_bench_database  # noqa: E402
from bench._timing import percentiles_ms  # noqa: E402
from bench.console_tenant import build, tenant_name  # noqa: E402

DATABASE = "kindmem_bench_console"


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
    p = percentiles_ms(samples)
    return p[50], p[95]


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
    use_bench_database(DATABASE, fresh=args.fresh, niceness=10)
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

    # the web process's collector settings (config/wsgi.py), once the app is loaded
    from config.collector import tune_for_serving

    tune_for_serving()
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
