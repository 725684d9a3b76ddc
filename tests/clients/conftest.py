"""What the framework adapters' tests share: one live kindmem web server per module (gunicorn
on the test database, as production runs it, with the deterministic embedder so that semantic
and hybrid search answer), and a tenant to talk to it with, committed for its processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

from tests import factories
from tests.approvals.conftest import declare


@pytest.fixture(scope="module")
def live_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """The base URL of a gunicorn serving kindmem for the tests of one module. Each test
    commits its own tenant (`django_db(transaction=True)`) and the flush after it removes it;
    the server's processes stay up between tests."""
    from tests.processes import web_server

    with ExitStack() as stack:
        with django_db_blocker.unblock():
            base = stack.enter_context(web_server(env={"KINDMEM_EMBEDDER": "hashing"}))
        yield base


@dataclass
class Tenancy:
    """A tenant's project, an app key for it and its agent (`support-bot`, with declarations)."""

    tenant: Any
    project: Any
    app: factories.Keyed
    admin: factories.Keyed
    agent: Any


@pytest.fixture
def tenancy(transactional_db: None) -> Tenancy:
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    return Tenancy(
        tenant=tenant,
        project=project,
        app=factories.app_key_create(tenant, [project]),
        admin=factories.admin_key_create(tenant),
        agent=declare(factories.agent_create(tenant)),
    )
