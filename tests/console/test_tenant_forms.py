"""The console's forms for tenant staff: the tenant is their own, preselected and hidden; a
form naming another tenant or its rows answers a form error, never a 500; platform staff
still choose among every tenant."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from approvals.models import Approval, ApprovalStatus
from facts.models import RetentionPolicy
from kindmem.models import ApiKey, User
from privacy.models import AccessRequest, ErasureRequest
from tests.console.conftest import Populated, populate

pytestmark = pytest.mark.django_db

ERASURE_START = "admin:privacy_erasurerequest_start"
ACCESS_START = "admin:privacy_accessrequest_start"
# The erasure start page's confirmation of its preview (nothing matches these ids).
CONFIRMED = {"step": "confirm", "nothing_matches_confirmed": "on"}


@pytest.fixture
def tenants(api: Any, world: Any, other_world: Any) -> tuple[Populated, Populated]:
    return populate(api, world, "zqalpha"), populate(api, other_world, "zqbeta")


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def hidden_tenant(html: str) -> str | None:
    found = re.search(r'<input type="hidden" name="tenant" value="([^"]*)"', html)
    return found.group(1) if found else None


def test_an_officer_sees_their_tenant_preselected_and_hidden_on_both_start_forms(tenants):
    # given a privacy officer of tenant A, and tenant B
    ours, theirs = tenants
    officer = signed_in(ours.staff.officer)
    for name in (ERASURE_START, ACCESS_START):
        # when they open the start form
        page = officer.get(reverse(name)).content.decode()
        # then the tenant is A's, hidden; B is nowhere
        assert hidden_tenant(page) == str(ours.world.tenant.id), name
        assert '<select name="tenant"' not in page
        assert theirs.world.tenant.name not in page
        assert str(theirs.world.tenant.id) not in page


def test_an_erasure_for_another_tenant_is_a_form_error_and_writes_nothing(tenants):
    # given a privacy officer of tenant A
    ours, theirs = tenants
    officer = signed_in(ours.staff.officer)
    before = ErasureRequest.objects.count()
    # when they post an erasure naming tenant B (which row security would refuse)
    response = officer.post(
        reverse(ERASURE_START),
        {
            "tenant": theirs.world.tenant.id,
            "target_kind": "participant",
            "target_id": f"p-{theirs.marker}",
            "reason": "tampered",
        },
    )
    # then the form answers "not a valid choice", names nothing of B, and nothing was written
    page = response.content.decode()
    assert response.status_code == 200
    assert "Select a valid choice" in page
    assert theirs.world.tenant.name not in page
    assert ErasureRequest.objects.count() == before


def test_an_access_request_for_another_tenant_is_a_form_error_and_writes_nothing(tenants):
    ours, theirs = tenants
    officer = signed_in(ours.staff.officer)
    before = AccessRequest.objects.count()
    response = officer.post(
        reverse(ACCESS_START),
        {
            "tenant": theirs.world.tenant.id,
            "subject_kind": "participant",
            "subject_id": f"p-{theirs.marker}",
        },
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert AccessRequest.objects.count() == before


def test_an_officer_starts_an_erasure_in_their_own_tenant_without_choosing_it(tenants):
    # given the start form as tenant A's officer got it
    ours, _ = tenants
    officer = signed_in(ours.staff.officer)
    tenant = hidden_tenant(officer.get(reverse(ERASURE_START)).content.decode())
    # when they submit it
    response = officer.post(
        reverse(ERASURE_START),
        {
            "tenant": tenant,
            "target_kind": "participant",
            "target_id": "p-new",
            "reason": "email",
            **CONFIRMED,
        },
    )
    # then the erasure is A's
    erasure = ErasureRequest.objects.get(target_id="p-new")
    assert response.status_code == 302
    assert erasure.tenant_id == ours.world.tenant.id


def test_platform_staff_choose_among_every_tenant(tenants):
    # given a superuser of no tenant
    ours, theirs = tenants
    root = signed_in(User.objects.create_superuser(username="root", password="root-pw"))
    # when they open the start form, then both tenants are choices
    page = root.get(reverse(ERASURE_START)).content.decode()
    assert hidden_tenant(page) is None
    assert ours.world.tenant.name in page
    assert theirs.world.tenant.name in page
    # and an erasure for tenant B is B's
    response = root.post(
        reverse(ERASURE_START),
        {
            "tenant": theirs.world.tenant.id,
            "target_kind": "participant",
            "target_id": "p-root",
            "reason": "ticket",
            **CONFIRMED,
        },
    )
    assert response.status_code == 302
    assert ErasureRequest.objects.get(target_id="p-root").tenant_id == theirs.world.tenant.id


def test_a_tenant_superuser_adds_a_key_in_their_tenant_and_not_for_another_tenants_user(tenants):
    # given a superuser bound to tenant A
    ours, theirs = tenants
    admin_a = signed_in(ours.staff.superuser)
    add = reverse("admin:kindmem_apikey_add")
    # when they open the add form, the tenant is A's, hidden, and only A's users are choices
    page = admin_a.get(add, {"tenant": theirs.world.tenant.id}).content.decode()
    assert hidden_tenant(page) == str(ours.world.tenant.id)
    assert ours.world.user.username in page
    assert theirs.world.user.username not in page
    # when they post a user key for B's user, and an app key for B's project
    for extra in (
        {"kind": "user", "user": theirs.world.user.id},
        {"kind": "app", "projects": [theirs.world.project.id]},
        {"kind": "user", "user": theirs.world.user.id, "tenant": theirs.world.tenant.id},
    ):
        response = admin_a.post(add, {"tenant": ours.world.tenant.id, "name": "x", **extra})
        # then it is a form error, and no key is made
        assert response.status_code == 200, extra
        assert "Select a valid choice" in response.content.decode(), extra
    assert not ApiKey.objects.filter(name="x").exists()
    # and an app key without a project is a form error too, not the service's 500
    response = admin_a.post(add, {"tenant": ours.world.tenant.id, "name": "x", "kind": "app"})
    assert response.status_code == 200
    assert "at least one project" in response.content.decode()
    # and a key for A's own user is made in A
    response = admin_a.post(
        add,
        {"tenant": ours.world.tenant.id, "name": "x", "kind": "user", "user": ours.world.user.id},
    )
    assert response.status_code == 302
    assert ApiKey.objects.get(name="x").tenant_id == ours.world.tenant.id


def test_a_tenant_superusers_new_user_and_policy_are_of_their_tenant(tenants):
    ours, theirs = tenants
    admin_a = signed_in(ours.staff.superuser)
    # a new user: the tenant is hidden and A's; leaving it out is an error, not a platform user
    add_user = reverse("admin:kindmem_user_add")
    page = admin_a.get(add_user).content.decode()
    assert hidden_tenant(page) == str(ours.world.tenant.id)
    body = {"username": "new-a", "password1": "a-long-pass-9", "password2": "a-long-pass-9"}
    assert admin_a.post(add_user, {**body, "usable_password": "true"}).status_code == 200
    response = admin_a.post(
        add_user, {**body, "usable_password": "true", "tenant": ours.world.tenant.id}
    )
    assert response.status_code == 302
    assert User.objects.get(username="new-a").tenant_id == ours.world.tenant.id
    # a retention policy: named for B in the query string, it is still A's
    add_policy = reverse("admin:facts_retentionpolicy_add")
    page = admin_a.get(add_policy, {"tenant": theirs.world.tenant.id}).content.decode()
    assert hidden_tenant(page) == str(ours.world.tenant.id)
    response = admin_a.post(
        add_policy, {"tenant": ours.world.tenant.id, "fact_type": "diet", "keep_days": 7}
    )
    assert response.status_code == 302
    assert RetentionPolicy.objects.get(fact_type="diet").tenant_id == ours.world.tenant.id


def test_deciding_another_tenants_approval_is_a_404_and_changes_nothing(tenants):
    ours, theirs = tenants
    reviewer = signed_in(ours.staff.reviewer)
    pending = Approval.objects.get(tenant=theirs.world.tenant, status=ApprovalStatus.PENDING)
    queue = reverse("admin:approvals_approval_changelist")
    decide = reverse("admin:approvals_approval_decide", args=[pending.id])
    assert reviewer.post(decide, {"decision": "approve"}).status_code == 404
    reviewer.post(queue, {"action": "approve_selected", "_selected_action": [pending.id]})
    pending.refresh_from_db()
    assert pending.status == ApprovalStatus.PENDING
