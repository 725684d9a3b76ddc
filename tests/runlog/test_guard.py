"""The SQL run guard equals its Python reference (the seed's `isRecallReadableBy`)."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindmem.access import Readers
from kindmem.guards import run_guard
from kindmem.models import Run
from runlog.models import LogEntry
from runlog.services import log_append
from tests import factories
from tests.oracles import is_run_readable_by

PARTICIPANTS = [None, "p-1", "p-2"]
THREADS = [None, "t-1", "t-2"]


@pytest.fixture
def pool(world):
    """A run, with one log entry, for every combination of project, participant, user and
    thread (2 x 3 x 3 x 3 = 54 runs), plus the ids a reader may name."""
    second = factories.project_create(world.tenant)
    other_user = factories.user_create(world.tenant)
    projects = [world.project, second]
    users = [None, world.user, other_user]
    # Built straight in the table, not minted (factories.run_create): minting refuses a run
    # for both an end user and a Kindgi user, and the guard must be right for every row.
    runs = []
    for n, (project, participant, user, thread) in enumerate(
        itertools.product(projects, PARTICIPANTS, users, THREADS)
    ):
        runs.append(
            Run.objects.create(
                tenant=world.tenant,
                agent=world.agent,
                agent_version="1",
                project=project,
                participant_id=participant,
                user=user,
                thread_id=thread,
                token_prefix=f"pool{n}",
                token_hash="x",
                expires_at=timezone.now() + timedelta(hours=1),
            )
        )
    for run in runs:
        log_append(principal=world.admin.principal, run=run, kind="note", payload={})
    rows = {
        str(run.id): {
            "project_id": str(run.project_id),
            "participant_id": run.participant_id,
            "user_id": str(run.user_id) if run.user_id else None,
            "thread_id": run.thread_id,
        }
        for run in runs
    }
    names = {
        "project": [str(p.id) for p in projects] + [str(uuid.uuid4())],
        "participant": ["p-1", "p-2", "p-3"],
        "user": [str(world.user.id), str(other_user.id), str(uuid.uuid4())],
        "thread": ["t-1", "t-2", "t-3"],
    }
    return world, rows, names


def readers_from(data: st.DataObject, names: dict[str, list[str]]) -> Readers:
    def some(kind: str) -> frozenset[str]:
        return frozenset(data.draw(st.sets(st.sampled_from(names[kind]), max_size=3)))

    if data.draw(st.integers(0, 3)) == 0:
        # an app key's, as `readers_for` makes them: over the Kindgi users' runs of its projects
        projects = some("project")
        return Readers(project_ids=projects, on_behalf_of_project_ids=projects)
    return Readers(
        all=data.draw(st.integers(0, 9)) == 0,  # rarely: it admits everything
        project_ids=some("project"),
        participant_ids=some("participant"),
        user_ids=some("user"),
        thread_ids=some("thread"),
        on_behalf_of_project_ids=some("project"),
    )


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_sql_run_guard_equals_the_python_reference(pool, data):
    # given generated readers over the pool's ids (and ids of nothing)
    world, rows, names = pool
    readers = readers_from(data, names)

    # when the guard selects runs and log entries in SQL
    runs = {
        str(i)
        for i in Run.objects.filter(tenant=world.tenant)
        .filter(run_guard(readers))
        .values_list("id", flat=True)
    }
    entries = {
        str(i)
        for i in LogEntry.objects.readable_by(world.tenant.id, readers).values_list(
            "run_id", flat=True
        )
    }

    # then both are exactly the runs the Python reference admits
    expected = {run_id for run_id, row in rows.items() if is_run_readable_by(row, readers)}
    assert runs == expected
    assert entries == expected
