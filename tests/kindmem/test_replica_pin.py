"""Read your writes (kindmem/replica.py): a credential that has just written reads on the
primary for the whole pin, wherever in a second the write fell."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.cache import cache

from kindmem import replica
from tests import factories


@pytest.mark.django_db
def test_a_writers_pin_lasts_its_seconds_whatever_the_fraction_of_the_second(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a replica configured with a pin of one second, and a credential of tenant A
    monkeypatch.setattr(replica, "replica_configured", lambda: True)
    settings.REPLICA_PIN_SECONDS = 1.0
    tenant = factories.tenant_create("a")
    principal = factories.admin_key_create(tenant).principal
    cache.delete(f"kindmem-wrote:{principal.id}")
    # when: it writes late in a second (the database cache keeps expiry to whole seconds)
    fraction = time.time() % 1
    time.sleep((0.9 - fraction) % 1)
    replica.written_by(principal)
    # then: half a second on, past the next whole second, it still reads on the primary...
    time.sleep(0.5)
    with replica.reads_on_replica(principal) as on_replica:
        assert on_replica is False
    # ...and once the second has passed, it is no longer pinned
    time.sleep(0.6)
    assert replica._pinned(principal) is False
    # and another credential, which wrote nothing, was never pinned
    other = factories.admin_key_create(tenant).principal
    assert replica._pinned(other) is False
