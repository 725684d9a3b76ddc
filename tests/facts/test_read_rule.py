"""DESIGN rule 3 on every read path, history and as-of reads included: a read returns only
current, approved, unexpired revisions, and a fact no read returns has no history to show."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from facts import sweeps
from facts.models import Revision

pytestmark = pytest.mark.django_db


def create(api: Any, keyed: Any, **body: Any) -> dict[str, Any]:
    body.setdefault("type", "preference")
    response = api.post("/v1/facts", body, format="json", **keyed.headers)
    assert response.status_code == 201, response.json()
    return response.json()["fact"]


def supersede(api: Any, keyed: Any, fact_id: str, content: Any) -> dict[str, Any]:
    response = api.post(
        f"/v1/facts/{fact_id}/supersede", {"content": content}, format="json", **keyed.headers
    )
    assert response.status_code == 201, response.json()
    return response.json()["fact"]


def test_hole_8_as_of_never_returns_a_revision_past_its_expires_at(api, world) -> None:
    # given: a fact written two hours ago, held an hour ago, expired a minute ago
    fact = create(api, world.admin, content="likes green tea")
    now = timezone.now()
    while_current = now - timedelta(hours=1)
    Revision.objects.filter(pk=fact["revision_id"]).update(
        created_at=now - timedelta(hours=2), expires_at=now - timedelta(minutes=1)
    )

    # when: the list is asked as of that moment, before and after the sweep
    before_sweep = api.get("/v1/facts", {"as_of": while_current.isoformat()}, **world.admin.headers)
    sweeps.expiry_sweep()
    after_sweep = api.get("/v1/facts", {"as_of": while_current.isoformat()}, **world.admin.headers)

    # then: it is past its expires_at now, so no read returns it, whatever the as-of time
    assert before_sweep.status_code == after_sweep.status_code == 200
    assert before_sweep.json()["facts"] == []
    assert after_sweep.json()["facts"] == []


def test_hole_8_no_read_returns_a_superseded_revision_past_its_expires_at(api, world) -> None:
    # given: a fact whose first revision (written two hours ago, held an hour ago) expired a
    # minute ago, after it was superseded by one that does not expire
    fact = create(api, world.admin, content="likes green tea")
    supersede(api, world.admin, fact["id"], "likes oolong tea")
    now = timezone.now()
    while_first = now - timedelta(hours=1)
    Revision.objects.filter(pk=fact["revision_id"]).update(
        created_at=now - timedelta(hours=2), expires_at=now - timedelta(minutes=1)
    )

    # when: its history, and the list as of when the first revision was current
    history = api.get(f"/v1/facts/{fact['id']}/revisions", **world.admin.headers)
    then = api.get("/v1/facts", {"as_of": while_first.isoformat()}, **world.admin.headers)

    # then: the live fact and its unexpired revision only
    assert [r["version"] for r in history.json()["revisions"]] == [2]
    assert then.json()["facts"] == []


def test_hole_8_as_of_in_the_future_drops_what_will_have_expired_by_then(api, world) -> None:
    # given: a fact expiring tomorrow
    fact = create(api, world.admin, content="likes green tea")
    Revision.objects.filter(pk=fact["revision_id"]).update(
        expires_at=timezone.now() + timedelta(days=1)
    )

    # when: the list is asked as of now and as of the day after tomorrow
    now = api.get("/v1/facts", {"as_of": timezone.now().isoformat()}, **world.admin.headers)
    later = api.get(
        "/v1/facts",
        {"as_of": (timezone.now() + timedelta(days=2)).isoformat()},
        **world.admin.headers,
    )

    # then: held now, not then
    assert [f["id"] for f in now.json()["facts"]] == [fact["id"]]
    assert later.json()["facts"] == []
