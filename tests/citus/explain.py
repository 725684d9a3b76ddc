"""Whether a query runs on one shard, as Citus plans it (its EXPLAIN on the coordinator).

A tenant-scoped query is routed when Citus's plan is one Citus custom scan with one task: the
whole query, sent to the one worker that holds the tenant's shard. A plan with more tasks
fans out to several shards; a "Distributed Subplan" is a piece the coordinator runs first and
feeds to the rest (another round trip, possibly to every shard); a plan with no task at all
never reached Citus's planner (a table left local to the coordinator)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.db import connection

TASK_COUNT = re.compile(r"Task Count: (\d+)")


def plan(sql: str, params: Sequence[Any] = ()) -> str:
    """The coordinator's EXPLAIN of `sql` (not run), on Django's connection as it stands (its
    role and tenant, e.g. inside `tenant_context`)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (COSTS OFF) {sql}", params)
        return "\n".join(line for (line,) in cursor.fetchall())


def assert_single_shard(sql: str, params: Sequence[Any] = ()) -> str:
    """Fail unless Citus runs `sql` on one shard; the plan, for more checks."""
    text = plan(sql, params)
    tasks = [int(n) for n in TASK_COUNT.findall(text)]
    assert tasks, f"not a distributed plan (no Citus task: is the table distributed?):\n{text}"
    assert "Distributed Subplan" not in text, f"a plan with subplans:\n{text}"
    assert tasks == [1], f"a multi-shard plan (task counts {tasks}):\n{text}"
    return text
