"""The console's frame (console/site.py, console/tenant_wall.py): a page a role does not
open is refused on a console page of its own, logged as one line; every page is titled as the
console's ("Erasure requests | kindmem console"), never with the stock admin's wording."""

from __future__ import annotations

import logging
import re
from html import unescape

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from django.utils.text import capfirst

from kindmem.models import User
from tests.console.conftest import staff_create

pytestmark = pytest.mark.django_db

SITE = "kindmem console"


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def title_of(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    assert found, "the page has no <title>"
    return unescape(" ".join(found.group(1).split()))


def staff_in_no_group(world) -> User:
    return User.objects.create_user(
        username="no-role", password="pw", tenant=world.tenant, is_staff=True
    )


@pytest.mark.parametrize(
    ("role", "url"),
    [
        # a privacy officer's list, refused by the stock admin view
        ("reviewer", reverse("admin:privacy_erasurerequest_changelist")),
        # a privacy officer's page of the console's own
        ("reviewer", reverse("admin:privacy_erasurerequest_start")),
        ("reviewer", reverse("admin:privacy_accessrequest_start")),
        # a reviewer's list, for staff in no group
        ("no group", reverse("admin:facts_fact_changelist")),
    ],
)
def test_a_page_the_role_does_not_open_is_the_consoles_own_refusal_logged_in_one_line(
    world, caplog, role, url
):
    # given a staff member whose role does not open the page
    user = staff_in_no_group(world) if role == "no group" else staff_create(world, "no", role)
    client = signed_in(user)
    caplog.set_level(logging.INFO)
    # when they open it
    response = client.get(url)
    # then it is refused on a page of the console: its header, navigation and way home
    assert response.status_code == 403
    assert "admin/console/refused.html" in [t.name for t in response.templates]
    html = response.content.decode()
    assert title_of(html) == f"Not open to your role | {SITE}"
    assert f'<div id="site-name"><a href="{reverse("admin:index")}">{SITE}</a></div>' in html
    assert 'id="nav-sidebar"' in html
    assert 'id="logout-form"' in html
    assert "This page is not open to your role" in html
    # and the log says so in one warning line, with no traceback: a refusal is not a bug
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.getMessage()) for r in logged] == [("django.request", f"Forbidden: {url}")]
    assert [r.exc_info for r in logged] == [None]


def test_the_refusal_names_the_roles_the_staff_member_has(world):
    reviewer = staff_create(world, "named", "reviewer")
    html = signed_in(reviewer).get(reverse("admin:privacy_erasurerequest_start")).content.decode()
    assert "not open to your role (reviewer)" in html


def test_a_signed_out_visitor_is_still_sent_to_sign_in(client):
    response = client.get(reverse("admin:privacy_erasurerequest_start"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_every_list_is_titled_by_its_name_and_the_console(world):
    # given platform staff, who open every list
    client = signed_in(staff_create(world, "titles", "superuser"))
    own = {"approvals.approval": "The review queue"}
    titles = {}
    for model in admin.site._registry:
        opts = model._meta
        response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert response.status_code == 200, opts.label_lower
        titles[opts.label_lower] = title_of(response.content.decode())
    # then each is "<the list's name> | kindmem console", as its heading says
    assert titles == {
        label: f"{own.get(label) or capfirst(model._meta.verbose_name_plural)} | {SITE}"
        for model in admin.site._registry
        if (label := model._meta.label_lower)
    }
    assert titles["privacy.erasurerequest"] == f"Erasure requests | {SITE}"


def test_no_console_page_carries_the_stock_admins_wording(world):
    # given the site's pages and every list, and the erasure pages of the console's own
    client = signed_in(staff_create(world, "wording", "superuser"))
    urls = [
        reverse("admin:index"),
        reverse("admin:privacy_erasurerequest_start"),
        reverse("admin:privacy_erasurerequest_lookup"),
        reverse("admin:privacy_accessrequest_start"),
        *(
            reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist")
            for m in admin.site._registry
        ),
    ]
    # when each is opened, then its title and heading are the console's
    for url in urls:
        html = client.get(url).content.decode()
        title = title_of(html)
        assert title.endswith(f" | {SITE}"), (url, title)
        for stock in ("Django", "Select ", "Site administration"):
            assert stock not in title, (url, title)
        heading = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S)
        assert heading is None or not heading.group(1).strip().startswith("Select "), url
    signed_out = Client().get(reverse("admin:login")).content.decode()
    assert title_of(signed_out) == f"Log in | {SITE}"
