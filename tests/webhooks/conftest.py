from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.webhooks.receiver import Receiver, receiver_running
from webhooks import outbox


@pytest.fixture(autouse=True)
def _fresh_subscriptions() -> Iterator[None]:
    """No test inherits another's memory that a tenant has no endpoint."""
    outbox._quiet.clear()
    yield
    outbox._quiet.clear()


@pytest.fixture
def local_receivers(settings: Any) -> None:
    """Receivers on 127.0.0.1 may be sent to (the operator's switch; off by default)."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    settings.WEBHOOK_BACKOFF_SECONDS = 0.2


@pytest.fixture
def receiver(local_receivers: None) -> Iterator[Receiver]:
    with receiver_running() as running:
        yield running
