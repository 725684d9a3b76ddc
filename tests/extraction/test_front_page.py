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


def test_the_console_lists_the_jobs_and_edits_the_tenants_settings(llm, declared, conversation):
    from django.urls import reverse

    from audit.models import AuditEvent
    from extraction.models import ExtractionSettings

    job = extraction_request(principal=declared.app.principal, conversation_id="conv-1").job
    admin = Client()
    admin.force_login(staff_create(declared, "z", "superuser"))
    listing = admin.get(reverse("admin:extraction_extractionjob_changelist")).content.decode()
    assert "conv-1" in listing
    assert "#1 to #4" in listing
    page = admin.get(reverse("admin:extraction_extractionjob_change", args=[job.id]))
    assert page.status_code == 200
    assert AuditEvent.objects.get(endpoint="GET console extraction job").subjects == [
        "participant:cust-1"
    ]
    # and the tenant's settings are set from their page
    added = admin.post(
        reverse("admin:extraction_extractionsettings_add"),
        {"tenant": declared.tenant.id, "review_all": "on", "extract_after_append": "support-bot"},
    )
    assert added.status_code == 302
    saved = ExtractionSettings.objects.get(tenant=declared.tenant)
    assert (saved.review_all, saved.extract_after_append) == (True, ["support-bot"])
