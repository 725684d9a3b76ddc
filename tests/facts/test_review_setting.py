"""The reviewer facts asks about an agent's write is the one settings.AGENT_WRITE_REVIEW names
(facts/review.py); with none named, a write is refused, writing nothing, rather than an
agent's write that must wait being accepted unseen."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from approvals.agent_review import reviewer
from facts.models import Revision
from facts.review import agent_write_review
from facts.services import fact_create
from tests import factories


def test_the_configured_reviewer_is_approvals_agent_review() -> None:
    assert agent_write_review() is reviewer


@pytest.mark.django_db
def test_with_no_reviewer_named_an_agents_write_that_must_wait_writes_nothing(
    settings: Any,
) -> None:
    # given: an agent's run, and no reviewer configured
    tenant = factories.tenant_create("a")
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    run = factories.run_create(app, project)
    settings.AGENT_WRITE_REVIEW = ""
    # when: the run writes a project-wide fact (wide-scope: it must wait for a person)
    with pytest.raises(ImproperlyConfigured, match="AGENT_WRITE_REVIEW"):
        fact_create(
            principal=run.principal,
            type="note",
            content="The office closes at five.",
            scope={"project_id": str(project.pk)},
        )
    # then: nothing was written
    assert not Revision.objects.of_tenant(tenant.pk).exists()
