"""The demo tenant's facts, and the console's fact pages."""

from __future__ import annotations

import pytest

from config.demo import demo_seed
from facts.models import Fact, Link, Revision
from kindmem.models import User

pytestmark = pytest.mark.django_db


def test_the_demo_seed_writes_a_few_facts_once() -> None:
    # given / when: the demo tenant is seeded twice (a refresh)
    demo_seed()
    demo_seed()

    # then: its facts exist once each, current, with one link (and the four memories the
    # support bot remembered wait for review, also once each: approvals/demo.py)
    assert Fact.objects.count() == 4 + 4
    assert Revision.objects.live().count() == 4
    assert Link.objects.count() == 1


def test_the_console_lists_facts_and_shows_a_facts_timeline(client) -> None:
    # given: the demo tenant and its superuser
    demo_seed()
    admin = User.objects.get(username="admin")
    client.force_login(admin)
    fact = Fact.objects.filter(participant_id="demo-customer-1").first()

    # when: staff open the fact list, search by subject id, and open one fact
    listing = client.get("/console/facts/fact/")
    search = client.get("/console/facts/fact/", {"q": "demo-customer-1"})
    page = client.get(f"/console/facts/fact/{fact.pk}/change/")
    revisions = client.get("/console/facts/revision/", {"q": "demo-customer-1"})

    # then: every page renders, and the search finds that person's two facts
    assert listing.status_code == search.status_code == page.status_code == 200
    assert revisions.status_code == 200
    assert search.context["cl"].result_count == 2
    assert b"Prefers answers" in page.content or b"Uses the Pro plan" in page.content
