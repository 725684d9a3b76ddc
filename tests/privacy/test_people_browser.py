"""The person page in Chromium: found from the header's search by words of a memory, every
part on one page that never runs wider than the window, each earlier revision one click away;
as a reviewer, only what a reviewer needs. Screenshots under var/test-artefacts/."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.conftest import console_login, screenshot
from tests.console.conftest import PASSWORD, staff_create
from tests.privacy.conftest import plant_person


@pytest.mark.django_db(transaction=True)
def test_an_officer_finds_a_person_by_a_memory_and_reads_their_whole_record(
    live_server, page, api, world
):
    # given a person with facts, a conversation, runs, a memory waiting for review, reads
    plant_person(world, "p-anna-42", "zqanna", facts=2, messages=5, entries=3)
    declare(world.agent)
    run = factories.run_create(
        world.app, world.project, agent=world.agent, participant_id="p-anna-42", thread_id="t-a"
    )
    remember(api, run, text="Always greet Anna in Spanish.", key="greeting")
    api.get("/v1/facts?participant_id=p-anna-42", **world.app.headers)
    officer = staff_create(world, "people", "officer")
    console_login(page, live_server.url, officer.username, PASSWORD)
    page.wait_for_selector("#site-name")
    # when they search from the header for words of one of her memories
    page.fill("#header-person-search input[name=q]", "zqanna coffee")
    page.press("#header-person-search input[name=q]", "Enter")
    # then she is found, and her page opens from the hit
    page.wait_for_selector("#person-hits")
    screenshot(page, "person-search")
    page.click(".person-hit a")
    page.wait_for_selector("#person-page")
    # and every part is there: facts with their history, review, conversations, runs, reads
    assert page.locator(".person-fact").count() == 4
    assert "zqanna prefers coffee number 0" in page.inner_text("#person-facts")
    page.locator("#person-facts details.km-history summary").first.click()
    assert "tea" in page.locator("#person-facts details.km-history").first.inner_text()
    assert page.locator(".person-approval").count() == 1
    assert page.inner_text(".person-message-count") == "5"
    assert page.locator("#person-runs .person-run").count() == 2
    assert page.locator("#person-reads .person-read").count() >= 1
    assert page.locator("#person-actions").is_visible()
    # and no table runs wider than the window
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    screenshot(page, "person-page-officer")
    # and her audit trail now lists that this officer looked
    assert AuditEvent.objects.filter(
        kind="person", principal=f"staff:{officer.pk}", subjects=["participant:p-anna-42"]
    ).exists()


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_sees_a_persons_memories_and_reviews_only(live_server, page, world):
    plant_person(world, "p-bert-7", "zqbert", facts=1, messages=2, entries=1)
    reviewer = staff_create(world, "people", "reviewer")
    console_login(page, live_server.url, reviewer.username, PASSWORD)
    page.wait_for_selector("#site-name")
    page.fill("#header-person-search input[name=q]", "p-bert-7")
    page.press("#header-person-search input[name=q]", "Enter")
    page.click(".person-hit a")
    page.wait_for_selector("#person-page")
    assert page.locator("#person-facts").is_visible()
    for part in ("conversations", "runs", "reads", "requests", "actions"):
        assert page.locator(f"#person-{part}").count() == 0, part
    screenshot(page, "person-page-reviewer")
