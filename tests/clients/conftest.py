"""What the client tests share. The framework adapters': one live kindmem web server per module
(gunicorn on the test database, as production runs it, with the deterministic embedder so that
semantic and hybrid search answer), and a tenant to talk to it with, committed for its
processes. The Python client's: a client on the real app in-process (Django's WSGI handler, in
the test's transaction), and an agent's world and runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from kindmem_client import Client

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


BASE = "http://testserver"


def wsgi_client(token: str | None, **kwargs: Any) -> Client:
    """A sync client on the real app, in-process (Django's WSGI handler, this test's DB)."""
    return Client(token, base_url=BASE, transport=httpx.WSGITransport(app=WSGIHandler()), **kwargs)


@pytest.fixture
def keep_the_tests_connection():
    """As Django's test client does: a request's end must not close the connection that holds
    this test's transaction (Django closes "old" connections when a request starts and ends)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def agent_world(world):
    """The world, with an agent that declares memory types (remember's review rules apply)."""
    declare(world.agent)
    return world


def mint(app_token: str, world: Any, participant_id: str, thread_id: str) -> dict[str, Any]:
    with wsgi_client(app_token) as app:
        return app.mint_run(
            agent_id=world.agent.agent_id,
            project_id=world.project.id,
            participant_id=participant_id,
            thread_id=thread_id,
        )
