"""The headline: an erasure survives its worker being killed (SIGKILL) again and again.

A real Celery worker process runs against the test database on a real Redis broker, on a
queue of its own (so workers of other tests sharing the Redis never take its tasks). It is
killed at different points of the erasure and restarted; the restarted worker resumes the
erasure (its start hook re-enqueues unfinished erasures). At the end the erasure is complete,
the receipt counts what was planted, the residue scan over every text-like column of every
table finds nothing, and the run-log chains still verify.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import transaction
from django.urls import reverse

from audit.models import Outcome, Phase
from audit.services import AuditNote, audit_record
from kindmem.models import Run
from privacy.models import ErasureRequest, RequestStatus
from privacy.services import erasure_start
from runlog.verify import verify_run
from tests import factories
from tests.privacy.conftest import plant_person, residue_scan
from tests.processes import database_env, redis_or_skip

REDIS_URL = os.environ.get("KINDMEM_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"
BATCH_SIZE = 4
PAUSE_MS = 250
# Kill the worker once the erasure has done this many records (of 85: facts 39, recall 42,
# run log 4, exports 1), at different offsets after the last batch committed: in the facts
# step, in the messages, and in the run log.
KILL_AT = [(8, 0.0), (45, 0.05), (83, 0.1)]


def _start_worker(data_dir: Path, queue: str) -> subprocess.Popen[bytes]:
    LOGS.append(data_dir / "worker.log")
    env = {
        **os.environ,
        **database_env(),
        "SECRET_KEY": "test-worker",
        "KINDMEM_DATA_DIR": str(data_dir),
        "CELERY_BROKER_URL": REDIS_URL,
        "KINDMEM_CELERY_QUEUE": queue,
        "KINDMEM_ERASURE_BATCH_SIZE": str(BATCH_SIZE),
        "KINDMEM_ERASURE_BATCH_PAUSE_MS": str(PAUSE_MS),
        "KINDMEM_ERASURE_STALE_SECONDS": "1",
        "KINDMEM_EMBEDDER": "none",
    }
    return subprocess.Popen(
        [
            sys.executable,
            *("-m", "celery", "-A", "config", "worker", "--pool", "solo"),
            *("--queues", queue, "--loglevel", "INFO"),
            *("--without-mingle", "--without-gossip", "--without-heartbeat"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(data_dir / "worker.log").open("ab"),
    )


def _wait(predicate, worker: subprocess.Popen[bytes], seconds: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        assert worker.poll() is None, f"the worker died on its own: {_log(worker)}"
        time.sleep(0.02)
    pytest.fail(f"not reached within {seconds} s: {_log(worker)}")


def _log(worker: subprocess.Popen[bytes]) -> str:
    """The tail of the worker's log, for a failure message."""
    return LOGS[-1].read_text()[-3000:] if LOGS and LOGS[-1].exists() else ""


LOGS: list[Path] = []


def _erasure(erasure_id: uuid.UUID) -> ErasureRequest:
    return ErasureRequest.objects.get(pk=erasure_id)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_an_erasure_completes_with_zero_residue_under_repeated_sigkill(world, api, tmp_path):
    redis_or_skip(REDIS_URL)
    queue = f"privacy-crash-{uuid.uuid4().hex[:8]}"
    # given a person with enough data for many batches, and another person beside them
    alice = plant_person(
        world, "participant-alice-crash", "zqcrashalice", facts=12, messages=40, entries=3, runs=4
    )
    bob = plant_person(world, "participant-bob-crash", "zqcrashbob", facts=2, messages=3)
    factories.access_request_create(
        world.tenant,
        "participant",
        alice.participant_id,
        export_json={"text": f"{alice.marker} exported"},
    )
    with transaction.atomic():  # someone read alice's facts, with a query naming her
        note = AuditNote(phase=Phase.READ, kind="fact", query_snapshot={"query": alice.marker})
        note.touch(ids=alice.fact_ids, subjects=[("participant", alice.participant_id)])
        audit_record(
            principal=world.app.principal, note=note, outcome=Outcome.SUCCESS, endpoint="GET facts"
        )
    assert residue_scan([alice.participant_id, alice.marker])
    # and an accepted erasure (the hold is in place before any worker runs)
    erasure_id = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id=alice.participant_id,
        reason="the person asked",
        requested_by="admin:test",
    ).id

    # when a worker erases, and is killed three times at different points, then restarted
    killed_in = []
    for done_at, offset in KILL_AT:
        worker = _start_worker(tmp_path, queue)
        try:
            _wait(lambda done_at=done_at: _erasure(erasure_id).done_count >= done_at, worker)
            time.sleep(offset)
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=30)
        progress = _erasure(erasure_id).progress["steps"]
        killed_in.append(next(name for name, step in progress.items() if not step["done"]))
        assert _erasure(erasure_id).status == RequestStatus.RUNNING
        # then, while the erasure is unfinished, a write for alice is refused, bob's is not
        scope = {"project_id": str(world.project.id)}
        refused = api.post(
            reverse("facts"),
            {
                "type": "note",
                "content": "late",
                "scope": {**scope, "participant_id": alice.participant_id},
            },
            format="json",
            **world.app.headers,
        )
        accepted = api.post(
            reverse("facts"),
            {
                "type": "note",
                "content": f"fine {done_at}",
                "scope": {**scope, "participant_id": bob.participant_id},
            },
            format="json",
            **world.app.headers,
        )
        assert (refused.status_code, refused.json()["code"]) == (409, "erasure-in-progress")
        assert accepted.status_code == 201
    assert killed_in == ["facts", "recall", "run-log"]
    worker = _start_worker(tmp_path, queue)
    try:
        _wait(lambda: _erasure(erasure_id).status == RequestStatus.COMPLETED, worker)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)

    # then the erasure is complete, after several attempts, and its receipt counts right
    erasure = _erasure(erasure_id)
    assert erasure.attempts >= len(KILL_AT) + 1
    assert erasure.receipt["counts_by_kind"] == {
        "access-request": 1,
        # the read that named her, and the three refused writes whose events kept her id in
        # the scope they asked for (audit targets)
        "audit-event": 4,
        "conversation": 1,
        "fact": 13,
        "link": 1,
        "message": 40,
        "revision": 25,
        "run": 4,
        "thread": 1,
    }
    assert erasure.target_id == ""
    # and nothing about alice is left in any column of any table
    assert residue_scan([alice.participant_id, alice.marker]) == []
    # and her runs' chains verify, bob's data is all there
    for run in alice.runs:
        assert verify_run(Run.objects.get(pk=run.pk)).ok
    assert residue_scan([bob.marker])
    # and a new run for alice reads no facts and recalls nothing
    minted = factories.run_create(
        world.app, world.project, participant_id=alice.participant_id, thread_id="fresh-thread"
    )
    facts = api.get(reverse("facts"), **minted.headers)
    assert facts.status_code == 200
    assert not {f["id"] for f in facts.json()["facts"]} & set(alice.fact_ids)
    assert alice.marker not in facts.content.decode()
    assert alice.participant_id not in facts.content.decode()
    recall = api.post(
        reverse("recall"),
        {
            "selections": [{"agent_id": "support-bot", "participant_id": alice.participant_id}],
            "mode": "list",
        },
        format="json",
        **world.app.headers,
    )
    assert recall.status_code == 200
    assert recall.json()["hits"] == []
