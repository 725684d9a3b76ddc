from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests import factories


def pytest_configure(config: pytest.Config) -> None:
    # Fast by configuration: nothing in the suite needs a slow hash.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@dataclass
class World:
    """One tenant with an org, a project, a member user, an agent and keys of every kind."""

    tenant: object
    org: object
    project: object
    user: object
    agent: object
    admin: factories.Keyed
    app: factories.Keyed
    user_key: factories.Keyed


@pytest.fixture
def world(db: None) -> World:
    tenant = factories.tenant_create()
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org)
    user = factories.user_create(tenant, projects=[project])
    agent = factories.agent_create(tenant)
    return World(
        tenant=tenant,
        org=org,
        project=project,
        user=user,
        agent=agent,
        admin=factories.admin_key_create(tenant),
        app=factories.app_key_create(tenant, [project]),
        user_key=factories.user_key_create(user),
    )


@pytest.fixture
def other_world(db: None) -> World:
    """A second tenant, to prove nothing crosses between tenants."""
    tenant = factories.tenant_create()
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org)
    user = factories.user_create(tenant, projects=[project])
    agent = factories.agent_create(tenant)
    return World(
        tenant=tenant,
        org=org,
        project=project,
        user=user,
        agent=agent,
        admin=factories.admin_key_create(tenant),
        app=factories.app_key_create(tenant, [project]),
        user_key=factories.user_key_create(user),
    )
