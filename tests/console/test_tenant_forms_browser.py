"""The privacy start forms in a real browser as a privacy officer of one tenant, with another
tenant present: the tenant is theirs, preselected and hidden, and submitting works."""

from __future__ import annotations

import pytest
from django.urls import reverse

from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from tests.conftest import console_login
from tests.console.conftest import PASSWORD, staff_create


@pytest.mark.django_db(transaction=True)
def test_an_officer_starts_an_erasure_and_an_access_request_in_their_tenant(
    live_server, page, world, other_world
):
    # given a privacy officer of tenant A, and tenant B
    officer = staff_create(world, "browser", "officer")
    console_login(page, live_server.url, officer.username, PASSWORD)
    page.wait_for_selector("#site-name")
    # when they open "Start an erasure"
    page.goto(f"{live_server.url}{reverse('admin:privacy_erasurerequest_start')}")
    # then the tenant is A's, preselected and hidden, and B is nowhere on the page
    tenant = page.locator("#id_tenant")
    assert tenant.get_attribute("type") == "hidden"
    assert tenant.get_attribute("value") == str(world.tenant.id)
    assert not tenant.is_visible()
    assert other_world.tenant.name not in page.content()
    assert str(other_world.tenant.id) not in page.content()
    # when they fill in the rest and submit
    page.select_option("#id_target_kind", "participant")
    page.fill("#id_target_id", "participant-browser")
    page.fill("#id_reason", "asked by email")
    page.click("#privacy-start input[type=submit]")
    # then the preview says nothing matches that id, in A, and B is nowhere on it
    page.wait_for_selector("#preview-nothing-matches")
    assert other_world.tenant.name not in page.content()
    # when they erase it anyway
    page.check("#id_nothing_matches_confirmed")
    page.click("#confirm-erasure")
    # then the erasure is accepted for A and its progress page shows
    page.wait_for_selector("#erasure-progress")
    erasure = ErasureRequest.objects.get()
    assert erasure.tenant_id == world.tenant.id
    assert page.inner_text("#erasure-status") == RequestStatus.PENDING
    # when they open "New subject access request", the same holds, and submitting works
    page.goto(f"{live_server.url}{reverse('admin:privacy_accessrequest_start')}")
    assert page.locator("#id_tenant").get_attribute("type") == "hidden"
    assert page.locator("#id_tenant").get_attribute("value") == str(world.tenant.id)
    assert other_world.tenant.name not in page.content()
    page.select_option("#id_subject_kind", "participant")
    page.fill("#id_subject_id", "participant-browser")
    page.click("#privacy-start input[type=submit]")
    page.wait_for_selector(".messagelist >> text=Access request accepted")
    access = AccessRequest.objects.get()
    assert access.tenant_id == world.tenant.id
    assert access.subject_id == "participant-browser"
    assert other_world.tenant.name not in page.content()
