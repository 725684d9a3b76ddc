"""The privacy API through the real client and URLs: erasures and subject access requests."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from audit.models import AuditEvent
from kindmem.models import ErasureHold
from privacy.erasure import erasure_run
from privacy.models import AccessRequest, ErasureRequest
from privacy.permissions import PRIVACY_OFFICER_GROUP
from privacy.tasks import build_access_export
from tests.privacy.conftest import plant_person

pytestmark = pytest.mark.django_db

ERASURE = {"target_kind": "participant", "target_id": "participant-api", "reason": "asked"}


def _erasure_url(erasure_id: object) -> str:
    return reverse("erasure", kwargs={"erasure_id": erasure_id})


def _sar_url(request_id: object) -> str:
    return reverse("subject-access-request", kwargs={"request_id": request_id})


def test_an_admin_starts_an_erasure_and_follows_it_to_its_receipt(api, world):
    # given a person with data
    plant_person(world, "participant-api", "zqapi", facts=1, messages=2, entries=1)
    # when an admin asks for the erasure
    created = api.post(reverse("erasures"), ERASURE, format="json", **world.admin.headers)
    # then it is accepted, held, and pending with a progress of 0
    assert created.status_code == 202
    body = created.json()
    assert body["status"] == "pending"
    assert body["progress"] == {"done": 0, "total": 0}
    assert ErasureHold.objects.filter(subject_id="participant-api").exists()
    # when a worker has run it
    erasure_run(erasure_id=body["id"])
    shown = api.get(_erasure_url(body["id"]), **world.admin.headers)
    # then the status says completed, with the receipt and a full progress bar
    assert shown.status_code == 200
    done = shown.json()
    assert done["status"] == "completed"
    assert done["target_id"] == ""
    assert done["progress"]["done"] == done["progress"]["total"] > 0
    assert done["receipt"]["counts_by_kind"]["message"] == 2


def test_a_user_in_the_privacy_officer_group_may_start_an_erasure_and_others_may_not(api, world):
    # given a user key without the role, and an app key
    refused_user = api.post(reverse("erasures"), ERASURE, format="json", **world.user_key.headers)
    refused_app = api.post(reverse("erasures"), ERASURE, format="json", **world.app.headers)
    # when the user joins the privacy officers
    world.user.groups.add(Group.objects.get_or_create(name=PRIVACY_OFFICER_GROUP)[0])
    accepted = api.post(reverse("erasures"), ERASURE, format="json", **world.user_key.headers)
    # then only the privacy officer's request was accepted
    assert (refused_user.status_code, refused_user.json()["code"]) == (403, "forbidden")
    assert refused_app.status_code == 403
    assert accepted.status_code == 202
    assert ErasureRequest.objects.count() == 1


@pytest.mark.parametrize(
    "body",
    [
        {**ERASURE, "target_kind": "planet"},
        {**ERASURE, "reason": ""},
        {"target_kind": "participant", "target_id": "p"},
        {**ERASURE, "target_id": ""},
        {**ERASURE, "target_id": "   "},
        {**ERASURE, "target_id": "x" * 201},
        {**ERASURE, "target_kind": "user", "target_id": "not-a-uuid"},
        {**ERASURE, "target_id": "nul\x00id"},
        {**ERASURE, "target_id": 12},
        {**ERASURE, "extra": "typo"},
        ["not", "an", "object"],
    ],
)
def test_a_bad_erasure_request_is_a_validation_error_and_writes_nothing(api, world, body):
    # when an admin sends a malformed erasure request
    response = api.post(reverse("erasures"), body, format="json", **world.admin.headers)
    # then it is refused in the one error shape, and nothing is held
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert not ErasureRequest.objects.exists()
    assert not ErasureHold.objects.exists()


def test_another_tenants_erasure_and_access_request_are_not_found(api, world, other_world):
    # given an erasure and an access request of the other tenant
    erasure = api.post(reverse("erasures"), ERASURE, format="json", **other_world.admin.headers)
    sar = api.post(
        reverse("subject-access-requests"),
        {"subject_kind": "participant", "subject_id": "p"},
        format="json",
        **other_world.admin.headers,
    )
    # when this tenant's admin asks for them (and for ids that are not ids)
    responses = [
        api.get(_erasure_url(erasure.json()["id"]), **world.admin.headers),
        api.get(_sar_url(sar.json()["id"]), **world.admin.headers),
        api.get(_erasure_url("not-a-uuid"), **world.admin.headers),
    ]
    # then each is a 404
    assert [r.status_code for r in responses] == [404, 404, 404]
    assert {r.json()["code"] for r in responses} == {"not-found"}


def test_an_access_export_is_downloaded_through_an_expiring_audited_link(api, world, settings):
    # given a person with data and an access request for them
    plant_person(world, "participant-sar", "zqsar", facts=1, messages=1, entries=1)
    created = api.post(
        reverse("subject-access-requests"),
        {"subject_kind": "participant", "subject_id": "participant-sar"},
        format="json",
        **world.admin.headers,
    )
    assert created.status_code == 202
    assert created.json()["download"] is None
    request_id = created.json()["id"]
    # when a worker builds the export and the admin follows the links
    build_access_export(request_id, tenant_id=str(world.tenant.id))
    links = api.get(_sar_url(request_id), **world.admin.headers).json()["download"]
    as_json = api.get(links["json"], **world.admin.headers)
    as_zip = api.get(links["zip"], **world.admin.headers)
    # then both formats come down, and creating and downloading were audited as reads
    assert as_json.status_code == 200
    assert b"zqsar" in as_json.content
    assert as_zip["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(as_zip.content)).namelist()
    assert "export.json" in names
    assert sum(n.startswith("facts/") for n in names) == 2
    events = AuditEvent.objects.of_tenant(world.tenant.id).about_subject(
        "participant:participant-sar"
    )
    assert list(events.order_by("seq").values_list("phase", "kind", "endpoint")) == [
        ("read", "access-export", "POST access-requests"),
        ("read", "access-export", "GET subject-access-request-download"),
        ("read", "access-export", "GET subject-access-request-download"),
    ]
    # when the link has expired, or was tampered with, or is used by another tenant
    tampered = api.get(links["json"].replace("token=", "token=x"), **world.admin.headers)
    settings.ACCESS_EXPORT_LINK_MAX_AGE = -1
    expired = api.get(links["json"], **world.admin.headers)
    # then nothing comes down
    assert (expired.status_code, expired.json()["code"]) == (410, "link-expired")
    assert tampered.status_code == 404


def test_a_download_link_of_another_tenant_is_not_found(api, world, other_world):
    # given a finished export of the other tenant
    sar = api.post(
        reverse("subject-access-requests"),
        {"subject_kind": "external", "subject_id": "crm-1"},
        format="json",
        **other_world.admin.headers,
    )
    build_access_export(sar.json()["id"], tenant_id=str(other_world.tenant.id))
    link = api.get(_sar_url(sar.json()["id"]), **other_world.admin.headers).json()["download"]
    # when this tenant's admin uses the link
    response = api.get(link["json"], **world.admin.headers)
    # then it is a 404 and nothing was audited for this tenant
    assert response.status_code == 404
    assert not AuditEvent.objects.of_tenant(world.tenant.id).exists()


@pytest.mark.parametrize(
    "body",
    [
        {"subject_kind": "conversation", "subject_id": "t"},
        {"subject_kind": "participant"},
        {"subject_kind": "participant", "subject_id": ""},
        {"subject_kind": "user", "subject_id": "nope"},
    ],
)
def test_a_bad_access_request_is_a_validation_error_and_writes_nothing(api, world, body):
    response = api.post(
        reverse("subject-access-requests"), body, format="json", **world.admin.headers
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert not AccessRequest.objects.exists()
    assert not AuditEvent.objects.exists()


def test_a_dry_run_answers_the_preview_and_starts_nothing(api, world):
    # given a person with data
    plant_person(world, "participant-api", "zqapi", facts=1, messages=2, entries=1)
    # when an admin asks for a dry run of their erasure (with and without a reason)
    url = reverse("erasures") + "?dry_run=true"
    answer = api.post(url, ERASURE, format="json", **world.admin.headers)
    bare = {k: v for k, v in ERASURE.items() if k != "reason"}
    without_reason = api.post(url, bare, format="json", **world.admin.headers)
    # then it says what would go, and nothing was started, held or audited
    assert answer.status_code == 200
    body = answer.json()
    assert body["dry_run"] is True
    assert body["nothing_matches"] is False
    assert body["counts"]["message"] == 2
    assert body["counts"]["conversation"] == 1
    assert body["total"] == sum(body["counts"].values())
    assert body["held"] == []
    assert body["unfinished_erasure_id"] is None
    assert without_reason.json() == body
    assert not ErasureRequest.objects.exists()
    assert not ErasureHold.objects.exists()
    assert not AuditEvent.objects.filter(endpoint__icontains="erasure").exists()
    # when the erasure is then started and run, its receipt counts what the preview said
    started = api.post(reverse("erasures"), ERASURE, format="json", **world.admin.headers)
    erasure_run(erasure_id=started.json()["id"])
    receipt = ErasureRequest.objects.get().receipt
    assert receipt["counts_by_kind"] == {k: v for k, v in body["counts"].items() if v}
    # and a dry run afterwards matches nothing, but names the completed erasure
    after = api.post(url, ERASURE, format="json", **world.admin.headers).json()
    assert after["nothing_matches"] is True
    assert [e["id"] for e in after["erased_before"]] == [started.json()["id"]]


def test_a_dry_run_for_an_unknown_id_says_nothing_matches(api, world):
    url = reverse("erasures") + "?dry_run=1"
    body = {"target_kind": "participant", "target_id": "participant-nobody"}
    answer = api.post(url, body, format="json", **world.admin.headers)
    assert answer.status_code == 200
    assert answer.json()["nothing_matches"] is True
    assert answer.json()["total"] == 0


@pytest.mark.parametrize(
    ("query", "body"),
    [
        ("?dry_run=maybe", ERASURE),
        ("?dry_run=true", {**ERASURE, "target_kind": "user", "target_id": "not-a-uuid"}),
        ("?dry_run=true", {**ERASURE, "extra": "typo"}),
    ],
)
def test_a_bad_dry_run_is_a_validation_error(api, world, query, body):
    response = api.post(reverse("erasures") + query, body, format="json", **world.admin.headers)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert not ErasureRequest.objects.exists()


def test_only_privacy_officers_may_dry_run(api, world):
    url = reverse("erasures") + "?dry_run=true"
    refused = [
        api.post(url, ERASURE, format="json", **world.user_key.headers).status_code,
        api.post(url, ERASURE, format="json", **world.app.headers).status_code,
        api.post(url, ERASURE, format="json").status_code,
    ]
    assert refused == [403, 403, 401]
