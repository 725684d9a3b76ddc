"""The fact page in Chromium: a history read as word diffs, everyone by name with the id on
hover, each revision one click from the run log entry that caused it, and no part of the page
wider than the window, wide or narrow. Screenshots under var/test-artefacts/."""

from __future__ import annotations

import pytest
from django.urls import reverse

from facts.services import fact_supersede
from kindmem.models import Project
from tests.conftest import console_login, screenshot
from tests.console.conftest import PASSWORD, fact_history_plant, staff_create

# An agent's text with no place to break: it must wrap, not widen the page.
UNBROKEN = "https://example.com/" + "a1b2c3d4" * 40


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.django_db(transaction=True)
def test_staff_read_a_facts_history_as_word_diffs_with_names_not_ids(live_server, page, api, world):
    # given a fact the agent wrote and changed twice (each change caused by a log entry),
    # that a reviewer approved and verified, that the app then changed to an unbroken URL,
    # and that two notes link to
    history = fact_history_plant(api, world, changes=2, links=2)
    fact_supersede(
        principal=world.app.principal,
        fact_id=history.fact_id,
        content={"text": f"Ada prefers the drinks listed at {UNBROKEN}", "source": UNBROKEN},
    )
    project = Project.objects.get(pk=world.project.pk)
    superuser = staff_create(world, "browser", "superuser")
    console_login(page, live_server.url, superuser.username, PASSWORD)
    page.wait_for_selector("#site-name")
    # when they open the fact's page
    page.goto(f"{live_server.url}{reverse('admin:facts_fact_change', args=[history.fact_id])}")
    page.wait_for_selector("#fact-page")
    # then the history is newest first, and each change is marked word by word
    versions = page.locator(".fact-revision").evaluate_all("els => els.map(e => e.dataset.version)")
    assert versions == ["6", "5", "4", "3", "2", "1"]
    v2 = page.locator("#revision-2 .fact-diff")
    assert v2.locator("del").all_inner_texts() == ["morning"]
    assert v2.locator("ins").all_inner_texts() == [" green", "evening, take 0"]
    assert page.locator("#revision-3 .fact-diff del").first.inner_text() == "green tea"
    # and what it says now is text, its other field a definition list
    assert "Ada prefers the drinks listed at" in page.inner_text("#fact-now")
    assert page.locator("#fact-now dl dt").all_inner_texts() == ["source"]
    # and trust and review are badges
    assert page.inner_text("#fact-badges .km-trust-asserted") == "asserted"
    assert page.inner_text("#fact-review") == "review: verified"
    assert page.inner_text("#revision-4 .fact-approval") == "review: verified"
    # and people, the agent, the project and the run are named, their ids on hover only
    written_by = page.locator("#revision-1 .fact-written-by a")
    assert written_by.inner_text() == "Support Bot"
    assert written_by.get_attribute("title") == "agent:support-bot"
    reviewer = page.locator("#revision-5 .fact-written-by a")
    assert reviewer.inner_text() == history.reviewer.username
    assert reviewer.get_attribute("title") == f"user:{history.reviewer.pk}"
    assert page.locator("#fact-where a", has_text=project.name).get_attribute("title") == str(
        project.pk
    )
    shown = page.inner_text("#fact-page")
    for an_id in (history.reviewer.pk, project.pk, history.run.pk, world.app.key.pk):
        assert str(an_id) not in shown
    # and nothing is wider than the window, not even the unbroken URL
    assert overflow(page) <= 0
    screenshot(page, "fact-page")
    # when the window is narrow, still nothing is wider
    page.set_viewport_size({"width": 760, "height": 900})
    assert overflow(page) <= 0
    screenshot(page, "fact-page-narrow")
    page.set_viewport_size({"width": 1280, "height": 900})
    # when they follow v2's "caused by" link, they land on that entry of the run's log
    page.click("#revision-2 .fact-caused-by a")
    page.wait_for_selector(f"#entry-{history.entries[1].sequence}")
    assert page.url.endswith(
        f"{reverse('admin:runlog_logentry_timeline', args=[history.run.pk])}"
        f"#entry-{history.entries[1].sequence}"
    )
    assert "asked, step 1" in page.inner_text(f"#entry-{history.entries[1].sequence}")
    assert "Support Bot" in page.inner_text("#run-summary")
    screenshot(page, "fact-page-run-log")
    # and back on the fact, the approval badge opens the approval
    page.go_back()
    page.wait_for_selector("#fact-page")
    page.click("#revision-4 .fact-approval")
    page.wait_for_url(f"**{reverse('admin:approvals_approval_change', args=[history.approval_id])}")


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_reads_the_same_names_with_links_only_where_their_role_goes(
    live_server, page, api, world
):
    history = fact_history_plant(api, world, changes=1, links=1)
    reviewer = staff_create(world, "browser", "reviewer")
    console_login(page, live_server.url, reviewer.username, PASSWORD)
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}{reverse('admin:facts_fact_change', args=[history.fact_id])}")
    page.wait_for_selector("#fact-page")
    # the agent and its run by name, as text (a reviewer opens no run log or agent page)
    assert page.inner_text("#revision-1 .fact-written-by") == "Support Bot"
    assert page.locator("#revision-1 .fact-written-by a").count() == 0
    assert page.locator("#revision-1 .fact-run a").count() == 0
    assert "a run of Support Bot" in page.inner_text("#revision-1 .fact-run")
    # the people and the approval are links
    assert page.locator("#fact-where a", has_text="p-ada").count() == 1
    assert page.locator("#revision-3 .fact-approval").get_attribute("href")
    assert overflow(page) <= 0
    screenshot(page, "fact-page-reviewer")
    # and the person's page is one click away
    page.click("#fact-where a:has-text('p-ada')")
    page.wait_for_selector("#person-page")
