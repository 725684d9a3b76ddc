"""Fifty agents appending to one run at once never fork its chain."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from runlog.models import LogEntry
from runlog.services import log_append
from runlog.verify import verify_run

APPENDERS = 50


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_gap_free_sequences_and_one_chain(minted):
    # given fifty threads, each with its own database connection, released at once
    start = threading.Barrier(APPENDERS)
    errors: list[BaseException] = []

    def appender(n: int) -> None:
        try:
            start.wait()
            log_append(principal=minted.principal, run=minted.run, kind="turn", payload={"n": n})
        except BaseException as exc:  # collected and asserted on below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(APPENDERS)]

    # when they all append
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then every append landed, numbered 1..50 without gaps, each on a distinct predecessor
    assert errors == []
    rows = list(LogEntry.objects.filter(run=minted.run).values_list("sequence", "prev_hash"))
    assert sorted(s for s, _ in rows) == list(range(1, APPENDERS + 1))
    assert len({p for _, p in rows}) == APPENDERS
    assert sorted(
        LogEntry.objects.filter(run=minted.run).values_list("payload__n", flat=True)
    ) == list(range(APPENDERS))
    result = verify_run(minted.run)
    assert (result.ok, result.length) == (True, APPENDERS)
