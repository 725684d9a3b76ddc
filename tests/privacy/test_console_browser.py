"""The erasure preview and its confirmation in Chromium, as a tenant's privacy officer: a real
person's counts, a mistyped id that matches nothing, and "was this id erased?" afterwards.
Each step saves a screenshot under var/test-artefacts/."""

from __future__ import annotations

import pytest
from django.urls import reverse

from facts.models import Revision
from kindmem.models import User
from privacy.erasure import erasure_run
from privacy.models import ErasureRequest, RequestStatus
from privacy.services import erasure_start
from tests.conftest import console_login, screenshot
from tests.console.conftest import PASSWORD, staff_create
from tests.privacy.conftest import plant_person


def _fill_start(page, base_url: str, target_id: str) -> None:
    page.goto(f"{base_url}{reverse('admin:privacy_erasurerequest_start')}")
    page.select_option("#id_target_kind", "participant")
    page.fill("#id_target_id", target_id)
    page.fill("#id_reason", "asked by email on 3 March")
    page.click("#privacy-start input[type=submit]")


@pytest.mark.django_db(transaction=True)
def test_an_officer_previews_an_erasure_catches_a_typo_and_confirms_the_right_id(
    live_server, page, world, other_world
):
    # given a privacy officer of tenant A, a person with data (one revision held), and B
    officer = staff_create(world, "pv", "officer")
    alice = plant_person(world, "participant-alice", "zqalice", facts=2, messages=4, entries=2)
    Revision.objects.filter(fact_id=alice.fact_ids[0], version=1).update(legal_hold=True)
    plant_person(other_world, "participant-alise", "zqother", facts=1, messages=1, entries=1)
    console_login(page, live_server.url, officer.username, PASSWORD)
    page.wait_for_selector("#site-name")
    # when they start an erasure with a typo (B's person has that id: it must not count)
    _fill_start(page, live_server.url, "participant-alise")
    # then the preview says plainly that nothing matches, and confirming needs the box ticked
    page.wait_for_selector("#preview-nothing-matches")
    assert "Nothing matches this id" in page.inner_text("#preview-nothing-matches")
    assert page.locator("#preview-counts").count() == 0
    assert other_world.tenant.name not in page.content()
    screenshot(page, "erasure-preview-nothing-matches")
    page.click("#confirm-erasure")
    page.wait_for_selector(".errorlist >> text=Tick the box")
    assert not ErasureRequest.objects.exists()
    screenshot(page, "erasure-preview-nothing-matches-unticked")
    # when they go back, correct the id and preview again
    page.click("#back-to-form")
    assert page.input_value("#id_target_id") == "participant-alise"
    page.fill("#id_target_id", "participant-alice")
    page.click("#privacy-start input[type=submit]")
    # then they see the counts per kind and the held revision, and still nothing has started
    page.wait_for_selector("#preview-counts")
    counts = {
        row.get_attribute("data-kind"): int(row.locator("td.count").inner_text())
        for row in page.locator("#preview-counts tbody tr").all()
    }
    assert counts["message"] == 4
    assert counts["conversation"] == 1
    assert "Kept under legal hold: 1 revision" in page.inner_text("#preview-held")
    assert not ErasureRequest.objects.exists()
    screenshot(page, "erasure-preview-counts")
    # when they confirm
    page.click("#confirm-erasure")
    # then the erasure runs to a receipt that counts what the preview said
    page.wait_for_selector("#erasure-progress")
    erasure = ErasureRequest.objects.get()
    erasure_run(erasure_id=erasure.pk)
    page.wait_for_selector("#erasure-receipt", timeout=15_000)
    assert page.inner_text("#erasure-status") == RequestStatus.COMPLETED
    receipt = ErasureRequest.objects.get().receipt["counts_by_kind"]
    assert receipt == {k: v for k, v in counts.items() if v}
    screenshot(page, "erasure-receipt")
    # when they later ask whether that id was erased
    page.goto(f"{live_server.url}{reverse('admin:privacy_erasurerequest_lookup')}")
    page.select_option("#id_target_kind", "participant")
    page.fill("#id_target_id", "participant-alice")
    page.click("#erasure-lookup input[type=submit]")
    # then the completed erasure is found, though it forgot the id
    page.wait_for_selector("#lookup-answer")
    assert page.inner_text("#lookup-answer h2").startswith("Yes")
    screenshot(page, "erasure-lookup")


# The parts of the page that scroll sideways: Django's list wraps its table in one that does,
# so a table wider than its place is cut off there, short of making the page wider.
SCROLLING_SIDEWAYS = """[...document.querySelectorAll('*')]
    .filter(e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
                 && e.scrollWidth > e.clientWidth)
    .map(e => e.id || e.className || e.tagName)"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["officer", "superuser", "platform staff"])
def test_the_erasure_list_fits_a_1366_pixel_window(live_server, browser, world, role):
    # given erasures running, done and failed, of people with long ids
    statuses = [RequestStatus.RUNNING, RequestStatus.COMPLETED, RequestStatus.FAILED]
    for i, status in enumerate(statuses):
        erasure = erasure_start(
            tenant_id=world.tenant.id,
            target_kind="participant",
            target_id=f"participant-{'x' * 40}-{i}",
            reason="asked by email, with the ticket number and the date it came in " * 2,
            requested_by="test",
        )
        ErasureRequest.objects.filter(pk=erasure.pk).update(status=status)
    if role == "platform staff":  # every tenant's: the tenant column and filter too
        staff = User.objects.create_superuser(username="platform", password=PASSWORD)
    else:
        staff = staff_create(world, f"wide-{role}", role)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        console_login(page, live_server.url, staff.username, PASSWORD)
        page.wait_for_selector("#site-name")
        # when they open the list of erasures
        page.goto(f"{live_server.url}{reverse('admin:privacy_erasurerequest_changelist')}")
        page.wait_for_selector("#result_list")
        # then every erasure is there, and nothing is wider than the window or its place in it
        assert page.locator("#result_list tbody tr").count() == 3
        screenshot(page, f"erasure-list-1366-{role.replace(' ', '-')}")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.evaluate(SCROLLING_SIDEWAYS) == []
        assert page.locator("#result_list thead th").last.is_visible()
    finally:
        context.close()
