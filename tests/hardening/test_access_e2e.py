"""A generated end-to-end test of who reads what, through the real HTTP API.

For each seed, two tenants are built with a seeded generator: orgs, projects, Kindgi users
with random memberships, app keys for random sets of projects, a reviewer, a privacy officer,
and runs minted through `POST /v1/runs` by app keys (for end users, with threads) and by user
keys (for themselves). Through the API they write facts of random scopes (as admin, app, user
and run credentials, and through `remember`), messages and run logs; facts are then
superseded, verified, deleted, expired (an ORM update of `expires_at`, as no sweep has run),
left pending review, approved or rejected; links join facts; finally an erasure holds one
person or conversation per tenant (its worker never runs: the hold stays in place).

All along, the test keeps its own model of the world: what each write was, whom each
credential acts for (its readers, derived here from the memberships and the runs' containers,
not from `readers_for`), every revision's state. Then every credential of both tenants reads
through every read route (`/v1/me`, facts list with cursors, detail, revisions, links, search
in its three modes, recall in its three modes, conversations' messages, approvals, run logs
and their verification, subject access exports, audit, a conversation's extraction and the job
it queues) and each answer is compared with what the Python references of the seed
(`tests/oracles.py`) and DESIGN rule 3 allow: only current, approved, unexpired revisions, of
facts the guard lets through, nothing about a held person, nothing of another tenant, a 404
(never a 403 with content) for what may not be read.

Extraction runs for real: kindmem's chat model is a scripted OpenAI-compatible server on
127.0.0.1 (tests/extraction/chat_server.py), so `POST /v1/conversations/{id}/extract` gets past
`extraction-unavailable` to the guard, the holds and the job it queues, and the worker's task
then shows that server what the job's run may read (compared with the model as any read is).
An unconfigured model would answer 503 to every credential allowed to ask and test no more
than the role check.

Every (item, credential) comparison is counted (`PAIRS`), per route; a disagreement is
collected, not raised, so that a failure lists all of them. Run with `-s` to see the counts;
`KINDMEM_E2E_SEEDS` (comma-separated, default `1`: one world keeps the run near a minute on a
busy 2-core machine) chooses the seeds; each seed is a new world and a new set of comparisons.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from extraction.provider import _configured
from tests.conftest import World
from tests.extraction.chat_server import ChatServer, chat_server_running
from tests.hardening.access_e2e.audit import Audit
from tests.hardening.access_e2e.exports import Exports
from tests.hardening.access_e2e.extractions import Extractions
from tests.hardening.access_e2e.model import revision_state
from tests.hardening.access_e2e.reads import Reads
from tests.hardening.access_e2e.states import StatesApply
from tests.hardening.access_e2e.tenants import TenantsBuild
from tests.hardening.access_e2e.writes import FactsWrite

pytestmark = pytest.mark.django_db

SEEDS = [int(s) for s in os.environ.get("KINDMEM_E2E_SEEDS", "1").split(",") if s.strip()]
MIN_PAIRS = 10_000  # per seed, i.e. per CI run at least this many (item, credential) checks
PAIRS: dict[int, Counter[str]] = {}  # seed -> route -> (item, credential) pairs compared


class E2E(TenantsBuild, FactsWrite, StatesApply, Reads, Exports, Extractions, Audit):
    """Builds the world through the API, keeps the model, and compares every read."""


@pytest.fixture
def scripted_llm(settings: Any) -> Iterator[ChatServer]:
    """kindmem's chat model: the scripted server, answering "nothing to remember"."""
    with chat_server_running() as chat:
        settings.LLM_URL, settings.LLM_MODEL, settings.LLM_RETRIES = chat.url, "scripted-1", 0
        _configured.cache_clear()
        yield chat
    _configured.cache_clear()


# `transaction-pooling`: as behind PgBouncer (KINDMEM_TRANSACTION_POOLING), every request one
# transaction and row security's settings local to it (tests/kindmem/test_pgbouncer.py runs
# live servers through a real PgBouncer; here the whole generated matrix holds in that mode).
@pytest.mark.parametrize("pooling", [False, True], ids=["session-settings", "transaction-pooling"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_credential_reads_through_every_route_exactly_what_the_reference_allows(
    api: APIClient,
    world: World,
    other_world: World,
    settings: Any,
    seed: int,
    pooling: bool,
    record_property: Any,
    scripted_llm: ChatServer,
) -> None:
    settings.TRANSACTION_POOLING = pooling
    settings_for_the_world(settings)
    e2e = E2E(api, seed)
    e2e.chat = scripted_llm
    world_built_read_and_compared(e2e, world, other_world, record_property)


def settings_for_the_world(settings: Any) -> None:
    settings.EMBEDDER = "hashing"  # deterministic vectors, so semantic search and recall run
    settings.EMBED_BUDGET_MS = 5_000
    # every memory a job's run may read is shown to the model (the world holds far fewer), so
    # what it is shown is exactly the guard's answer, not a search's top few
    settings.EXTRACTION_MAX_MEMORIES = 1_000


def world_built_read_and_compared(
    e2e: E2E, world: World, other_world: World, record_property: Any
) -> None:
    """Build the two tenants' world through the API, read it back with every credential
    through every route, and assert every answer is the model's."""
    seed = e2e.seed
    started = time.monotonic()

    # given: two tenants, their keys, runs minted by app and user keys, conversations, run
    # logs, facts of random scopes in every record state, links, and a hold in each
    a = e2e.tenant_build("A", world)
    b = e2e.tenant_build("B", other_world)
    for t in (a, b):
        e2e.runs_mint(t)
    for t, other in ((a, b), (b, a)):
        e2e.runs_refused(t, other)
    for t in (a, b):
        e2e.conversations_write(t)
        e2e.logs_write(t)
        e2e.facts_write(t)
        e2e.runs_write(t)
    e2e.as_of_mark()
    for t in (a, b):
        e2e.links_write(t)
        e2e.states_apply(t)
    for t, other in ((a, b), (b, a)):
        e2e.approvals_decide(t, other)
    for t in (a, b):
        e2e.expire(e2e.rng.sample([f.live for f in t.facts if f.live], 2))
        e2e.holds_start(t)
    built = time.monotonic()

    # when: every credential of both tenants reads through every read route
    for t in (a, b):
        for cred in t.creds:
            e2e.reads(cred)
    for t, other in ((a, b), (b, a)):
        e2e.held_decisions(t)
        e2e.exports(t, other)
    for t, other in ((a, b), (b, a)):
        e2e.extractions(t, other)
    for t, other in ((a, b), (b, a)):
        e2e.audit(t, other)

    # then: every answer is the model's, and the comparisons are many
    PAIRS[seed] = e2e.pairs  # the same world in either mode
    total = sum(e2e.pairs.values())
    states = Counter(revision_state(r) for f in e2e.all_facts() for r in f.revisions)
    print(
        f"\nseed {seed}: {total} (item, credential) pairs, {len(e2e.disagreements)} "
        f"disagreements; {e2e.calls} requests; {sum(len(t.creds) for t in (a, b))} "
        f"credentials, {len(e2e.all_facts())} facts (revisions: {dict(states)}), "
        f"{sum(len(c.messages) for t in (a, b) for c in t.convs.values())} messages, "
        f"{sum(len(t.runs) for t in (a, b))} runs, holds A {a.holds} B {b.holds}; "
        f"built in {built - started:.1f}s, read in {time.monotonic() - built:.1f}s\n"
        f"  per route: {dict(sorted(e2e.pairs.items()))}\n"
        f"  extraction's answers by status: {dict(sorted(e2e.extract_statuses.items()))}"
    )
    record_property("pairs_checked", total)
    record_property("disagreements", len(e2e.disagreements))
    for line in e2e.disagreements:
        print(" ", line)
    assert e2e.disagreements == []
    assert total >= MIN_PAIRS, total
    assert set(states) >= {"live", "superseded", "deleted", "expired", "pending", "rejected"}
    # an app key asked for the extraction of a Kindgi user's own conversation in one of its
    # projects (answered not found, as any unrecallable one: checked above)
    assert e2e.pairs["extract-users-own"] > 0
    # the extraction route answered every way it may: queued, up to date, forbidden, not found,
    # unauthenticated, and erasure-in-progress when a held conversation was there to ask for
    held = any(t.conversation_held(c) for t in (a, b) for c in t.convs.values())
    assert set(e2e.extract_statuses) >= {200, 202, 401, 403, 404} | ({409} if held else set())
