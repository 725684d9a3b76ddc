"""The privacy pages of the staff console: starting requests, the live progress bar, the
receipt, and the expiring, audited download."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from audit.models import AuditEvent
from kindmem.models import ErasureHold, User
from privacy.erasure import erasure_run
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.permissions import PRIVACY_OFFICER_GROUP
from privacy.tasks import build_access_export
from tests import factories
from tests.conftest import console_login
from tests.privacy.conftest import plant_person


def _staff(username: str, *, officer: bool) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username, is_staff=True)
    if officer:
        user.groups.add(Group.objects.get_or_create(name=PRIVACY_OFFICER_GROUP)[0])
    return user


@pytest.mark.django_db
def test_a_privacy_officer_starts_an_erasure_and_sees_its_progress_and_receipt(client, world):
    # given a privacy officer in the console and a person with data
    officer = _staff("officer", officer=True)
    client.force_login(officer)
    plant_person(world, "participant-console", "zqconsole", facts=1, messages=2, entries=1)
    # when they fill in the start form
    fields = {
        "tenant": world.tenant.id,
        "target_kind": "participant",
        "target_id": "participant-console",
        "reason": "asked by email",
    }
    preview = client.post(reverse("admin:privacy_erasurerequest_start"), fields)
    # then they see what it would erase, and nothing has started yet
    assert preview.status_code == 200
    assert 'id="preview-counts"' in preview.content.decode()
    assert not ErasureRequest.objects.exists()
    # when they confirm it
    response = client.post(
        reverse("admin:privacy_erasurerequest_start"), {**fields, "step": "confirm"}
    )
    # then it was accepted through erasure_start (held) and the page shows its progress
    erasure = ErasureRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
    assert erasure.requested_by == f"staff:{officer.pk}"
    assert ErasureHold.objects.filter(erasure_id=erasure.pk).exists()
    status_page = client.get(response["Location"]).content.decode()
    assert 'id="erasure-progress"' in status_page
    progress = client.get(reverse("admin:privacy_erasurerequest_progress", args=[erasure.pk]))
    assert progress.json() == {"status": "pending", "done": 0, "total": 0}
    # when a worker has run it
    erasure_run(erasure_id=erasure.pk)
    progress = client.get(reverse("admin:privacy_erasurerequest_progress", args=[erasure.pk]))
    status_page = client.get(response["Location"]).content.decode()
    listing = client.get(reverse("admin:privacy_erasurerequest_changelist"))
    # then the progress is full and the receipt is on the page
    assert progress.json()["status"] == "completed"
    assert progress.json()["done"] == progress.json()["total"] > 0
    assert "Receipt" in status_page
    assert erasure.pk.hex[:8] in status_page
    assert listing.status_code == 200
    assert "<progress" in listing.content.decode()


@pytest.mark.django_db
def test_staff_who_are_not_privacy_officers_cannot_start_requests(client, world):
    # given a staff member without the privacy-officer role
    client.force_login(_staff("clerk", officer=False))
    # when they try to start an erasure and an access request
    erasure = client.post(
        reverse("admin:privacy_erasurerequest_start"),
        {"tenant": world.tenant.id, "target_kind": "participant", "target_id": "p", "reason": "r"},
    )
    access = client.get(reverse("admin:privacy_accessrequest_start"))
    # then both are forbidden and nothing was written
    assert erasure.status_code == 403
    assert access.status_code == 403
    assert not ErasureRequest.objects.exists()


@pytest.mark.django_db
def test_an_officer_downloads_an_export_from_the_console_through_an_audited_link(
    client, world, settings
):
    # given an access request started from the console, built by a worker
    officer = _staff("officer2", officer=True)
    client.force_login(officer)
    plant_person(world, "participant-dl", "zqdl", facts=1, messages=1, entries=0)
    client.post(
        reverse("admin:privacy_accessrequest_start"),
        {"tenant": world.tenant.id, "subject_kind": "participant", "subject_id": "participant-dl"},
    )
    access = AccessRequest.objects.get()
    build_access_export(str(access.id), tenant_id=str(access.tenant_id))
    # when the officer follows the zip link of the list page
    listing = client.get(reverse("admin:privacy_accessrequest_changelist")).content.decode()
    link = re.search(r'href="([^"]+/download/zip/\?token=[^"]+)"', listing).group(1)
    download = client.get(link.replace("&amp;", "&"))
    # then the zip comes down, and both the request and the download are audited
    assert download.status_code == 200
    assert download["Content-Type"] == "application/zip"
    events = AuditEvent.objects.of_tenant(world.tenant.id).about_subject(
        "participant:participant-dl"
    )
    assert list(events.order_by("seq").values_list("principal", "endpoint")) == [
        (f"staff:{officer.pk}", "POST console access-request"),
        (f"staff:{officer.pk}", "GET console access-export"),
    ]
    # when the link has expired
    settings.ACCESS_EXPORT_LINK_MAX_AGE = -1
    expired = client.get(link.replace("&amp;", "&"))
    # then the officer is sent back to the list with the reason, and nothing comes down
    assert expired.status_code == 302
    assert events.count() == 2


@pytest.mark.django_db
def test_the_sweep_reports_are_listed_in_the_console(admin_client, world):
    factories.sweep_report_create(world.tenant, count=7)
    page = admin_client.get(reverse("admin:facts_sweepreport_changelist"))
    assert page.status_code == 200
    assert world.tenant.name in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_progress_bar_moves_live_in_a_real_browser(live_server, page, world, other_world):
    # given a pending erasure and a platform superuser (who picks among the tenants) watching
    User.objects.create_superuser(username="root", password="root-pw")
    plant_person(world, "participant-live", "zqlive", facts=2, messages=4, entries=1)
    console_login(page, live_server.url, "root", "root-pw")
    page.goto(f"{live_server.url}{reverse('admin:privacy_erasurerequest_start')}")
    page.select_option("#id_tenant", str(world.tenant.id))
    page.select_option("#id_target_kind", "participant")
    page.fill("#id_target_id", "participant-live")
    page.fill("#id_reason", "asked in person")
    page.click("#privacy-start input[type=submit]")
    page.click("#confirm-erasure")
    page.wait_for_selector("#erasure-progress")
    erasure = ErasureRequest.objects.get()
    assert page.inner_text("#erasure-status") == RequestStatus.PENDING
    # when a worker runs the erasure
    erasure_run(erasure_id=erasure.pk)
    # then, without a click, the page shows the finished erasure and its receipt
    page.wait_for_selector("#erasure-receipt", timeout=15_000)
    assert page.inner_text("#erasure-status") == RequestStatus.COMPLETED
    assert page.get_attribute("#erasure-progress", "value") == page.get_attribute(
        "#erasure-progress", "max"
    )


START = "admin:privacy_erasurerequest_start"


@pytest.mark.django_db
def test_an_erasure_of_an_id_nothing_matches_needs_an_explicit_confirmation(client, world):
    # given a privacy officer, and a person whose id they mistype
    client.force_login(_staff("officer-typo", officer=True))
    plant_person(world, "participant-anna", "zqanna", facts=1, messages=1, entries=0)
    fields = {
        "tenant": world.tenant.id,
        "target_kind": "participant",
        "target_id": "participant-ana",
        "reason": "asked by email",
    }
    # when they preview the erasure
    preview = client.post(reverse(START), fields).content.decode()
    # then the page says plainly that nothing matches, and asks for the box to be ticked
    assert "Nothing matches this id" in preview
    assert 'name="nothing_matches_confirmed"' in preview
    assert 'id="preview-counts"' not in preview
    # when they confirm without ticking it
    unticked = client.post(reverse(START), {**fields, "step": "confirm"})
    # then nothing starts and the preview asks again
    assert unticked.status_code == 200
    assert "Tick the box to erase it anyway" in unticked.content.decode()
    assert not ErasureRequest.objects.exists()
    # when they go back instead, the form keeps what they typed
    back = client.post(reverse(START), {**fields, "step": "edit"}).content.decode()
    assert 'value="participant-ana"' in back
    assert 'id="privacy-start"' in back
    # when they tick it and confirm
    ticked = client.post(
        reverse(START), {**fields, "step": "confirm", "nothing_matches_confirmed": "on"}
    )
    # then the erasure starts, and its receipt says nothing was erased
    erasure = ErasureRequest.objects.get()
    assert ticked.status_code == 302
    erasure_run(erasure_id=erasure.pk)
    status_page = client.get(ticked["Location"]).content.decode()
    assert 'id="receipt-nothing"' in status_page


@pytest.mark.django_db
def test_the_preview_lists_counts_per_kind_and_what_legal_hold_keeps(client, world):
    # given a person with a revision under legal hold
    from facts.models import Revision

    client.force_login(_staff("officer-held", officer=True))
    alice = plant_person(world, "participant-held-c", "zqheldc", facts=2, messages=3, entries=1)
    Revision.objects.filter(fact_id=alice.fact_ids[0], version=1).update(legal_hold=True)
    # when the officer previews the erasure
    page = client.post(
        reverse(START),
        {
            "tenant": world.tenant.id,
            "target_kind": "participant",
            "target_id": "participant-held-c",
            "reason": "asked",
        },
    ).content.decode()
    # then each kind is counted, and the held revision is listed with its fact
    assert re.search(r'data-kind="message"><td>messages</td><td class="count">3</td>', page)
    assert 'id="preview-held"' in page
    assert "Kept under legal hold: 1 revision" in page
    assert reverse("admin:facts_fact_change", args=[alice.fact_ids[0]]) in page
    assert not ErasureRequest.objects.exists()


@pytest.mark.django_db
def test_an_officer_checks_whether_an_id_was_erased(client, world):
    # given a completed erasure (its id forgotten)
    client.force_login(_staff("officer-lookup", officer=True))
    plant_person(world, "participant-gone", "zqgone", facts=1, messages=0, entries=0)
    from privacy.services import erasure_start

    erasure = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="participant-gone",
        reason="asked",
        requested_by="test",
    )
    erasure_run(erasure_id=erasure.pk)
    lookup = reverse("admin:privacy_erasurerequest_lookup")
    asked = {"tenant": world.tenant.id, "target_kind": "participant"}
    # when the officer checks that id, and another
    yes = client.post(lookup, {**asked, "target_id": "participant-gone"}).content.decode()
    no = client.post(lookup, {**asked, "target_id": "participant-here"}).content.decode()
    # then the first finds the erasure, the second nothing
    assert reverse("admin:privacy_erasurerequest_status", args=[erasure.pk]) in yes
    assert "Yes:" in yes
    assert "No: no erasure" in no
    assert reverse("admin:privacy_erasurerequest_status", args=[erasure.pk]) not in no


@pytest.mark.django_db
def test_an_erasures_own_page_is_its_status_page_and_dates_read_plainly(client, world):
    from privacy.services import erasure_start

    officer = _staff("officer-dates", officer=True)
    client.force_login(officer)
    erasure = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-dates",
        reason="asked",
        requested_by=f"staff:{officer.pk}",
    )
    change = client.get(reverse("admin:privacy_erasurerequest_change", args=[erasure.pk]))
    assert change.status_code == 302
    assert change["Location"] == reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
    listing = client.get(reverse("admin:privacy_erasurerequest_changelist")).content.decode()
    assert "a.m." not in listing
    assert "p.m." not in listing
    status = client.get(change["Location"]).content.decode()
    assert f'title="staff:{officer.pk}">officer-dates</a>' in status
