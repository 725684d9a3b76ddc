"""A streaming read replica (kindmem/replica.py), made with the embedded server's own
pg_basebackup: lag-tolerant reads go there, a credential reads its own write at once, the wall
holds there too, and a stopped replica costs no failed request."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from django.conf import settings

from tests import factories
from tests.processes import standby, web_server

pytestmark = [pytest.mark.slow, pytest.mark.topology]


def contents(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    facts = body["facts"] if "facts" in body else [h["fact"] for h in body["hits"]]
    return [f["content"] for f in facts]


def test_reads_go_to_the_replica_except_a_writers_own_and_fall_back_when_it_stops(
    transactional_db: None,
) -> None:
    # given: tenant A's admin and app keys, tenant B's admin key, and the web with a replica
    # that follows the primary, where A's admin has written a memory
    a = factories.tenant_create("a")
    project = factories.project_create(a)
    admin_a = factories.admin_key_create(a).token
    other_a = factories.app_key_create(a, [project]).token
    admin_b = factories.admin_key_create(factories.tenant_create("b")).token
    project_id = str(project.pk)
    role = settings.KINDMEM_APP_ROLE
    with standby() as replica:
        env = {
            "KINDMEM_REPLICA_URL": replica.url(role),
            "KINDMEM_REPLICA_PIN_SECONDS": "1",
            "KINDMEM_REPLICA_RETRY_SECONDS": "30",
        }
        with web_server("--workers", "1", env=env) as base, httpx.Client(base_url=base) as http:

            def listed(token: str) -> list[str]:
                return contents(http.get("/v1/facts", headers={"Authorization": f"Bearer {token}"}))

            def searched(token: str) -> list[str]:
                return contents(
                    http.post(
                        "/v1/facts/search",
                        json={"query": "zqfirst zqsecond", "mode": "keyword"},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                )

            def write(content: str) -> None:
                wrote = http.post(
                    "/v1/facts",
                    json={"type": "note", "content": content, "scope": {"project_id": project_id}},
                    headers={"Authorization": f"Bearer {admin_a}"},
                )
                assert wrote.status_code == 201, wrote.text

            write("zqfirst memory of tenant a")
            wait_until(lambda: listed(other_a) == ["zqfirst memory of tenant a"])
            # when: the replica stops replaying, and A's admin writes
            replica.query("SELECT pg_wal_replay_pause()")
            write("zqsecond memory of tenant a")
            # then: the writer reads its own write at once (it reads on the primary)...
            assert "zqsecond memory of tenant a" in listed(admin_a)
            assert "zqsecond memory of tenant a" in searched(admin_a)
            # ...while another credential reads on the replica, which has not replayed it
            assert listed(other_a) == ["zqfirst memory of tenant a"]
            assert searched(other_a) == ["zqfirst memory of tenant a"]
            # and once the pin has passed, so does the writer: its reads are the replica's
            time.sleep(1.2)
            assert "zqsecond memory of tenant a" not in listed(admin_a)
            # when the replica replays again, everyone finds the write there
            replica.query("SELECT pg_wal_replay_resume()")
            wait_until(lambda: "zqsecond memory of tenant a" in listed(other_a))
            assert sorted(searched(other_a)) == sorted(listed(other_a))
            # and the wall holds on the replica: tenant B reads nothing of A's there, and the
            # app role with no tenant set sees no row at all
            assert listed(admin_b) == []
            assert searched(admin_b) == []
            assert replica.query("SELECT count(*) FROM facts_revision", user=role) == [(0,)]
            # when the replica stops, the next read answers from the primary
            replica.stop()
            assert sorted(listed(other_a)) == [
                "zqfirst memory of tenant a",
                "zqsecond memory of tenant a",
            ]
            assert len(searched(admin_a)) == 2


def wait_until(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the replica did not catch up"
        time.sleep(0.1)
