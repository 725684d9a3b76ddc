"""The database a benchmark works in, and the text of a vector it COPYs there.

Each script has its own database (its tables kept between runs; `--fresh` rebuilds them),
created as the test runner creates one. Imported after `django.setup()`.
"""

from __future__ import annotations

import os

import numpy as np
from django.db import connection


def use_bench_database(
    name: str, *, fresh: bool, niceness: int | None = None, build_workers: int | None = None
) -> None:
    """Work in the database `name` (created, or rebuilt when `fresh`). On a shared machine the
    server process doing the work (the index builds above all) yields to everyone else's at
    `niceness`, and builds an index with `build_workers` parallel workers."""
    connection.settings_dict["TEST"]["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=not fresh)
    if niceness is None:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        os.setpriority(os.PRIO_PROCESS, cursor.fetchone()[0], niceness)
        if build_workers is not None:
            cursor.execute("SET max_parallel_maintenance_workers = %s", [build_workers])


def vector_text(v: np.ndarray, digits: int) -> str:
    """A vector as pgvector reads it in COPY's text format, each value to `digits` places."""
    return "[" + ",".join(f"{x:.{digits}f}" for x in v.tolist()) + "]"
