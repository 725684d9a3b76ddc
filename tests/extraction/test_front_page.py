"""The console's front page shows extraction's cost to the tenant's admin: tokens per agent,
today's against the daily cap, the jobs refused; its own tenant's only."""

from __future__ import annotations

import pytest
from django.test import Client

from extraction.metering import usage_day
from extraction.models import ExtractionUsage
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from tests.console.conftest import staff_create
from tests.extraction.conftest import completion

pytestmark = pytest.mark.django_db


def test_the_admin_sees_tokens_per_agent_and_the_refused_jobs(
    settings, llm, declared, conversation, other_world
):
    # given one refused extraction today (its tokens counted all the same), and another
    # tenant's usage
    settings.EXTRACTION_TENANT_DAILY_TOKENS = 5000
    llm.default = lambda payload: completion("not json", prompt_tokens=700, completion_tokens=42)
    job = extraction_request(principal=declared.app.principal, conversation_id="conv-1").job
    extract_conversation(str(job.id), tenant_id=str(declared.tenant.id))
    ExtractionUsage.objects.create(
        tenant=other_world.tenant, agent=other_world.agent, day=usage_day(), tokens_in=4242421
    )
    # when the tenant's admin opens the front page
    admin = Client()
    admin.force_login(staff_create(declared, "x", "superuser"))
    page = admin.get("/console/").content.decode()
    # then the panel says today's tokens against the cap, per agent, and the refused job
    assert '<strong id="extraction-today">742</strong> tokens' in page
    assert "of 5000 a day" in page
    assert "<td>support-bot</td><td>1</td><td>700</td><td>42</td><td>742</td>" in page
    assert "1 refused" in page
    assert "4242421" not in page
    # and a reviewer's front page has no such panel
    reviewer = Client()
    reviewer.force_login(staff_create(declared, "y", "reviewer"))
    assert 'id="extraction-cost"' not in reviewer.get("/console/").content.decode()
