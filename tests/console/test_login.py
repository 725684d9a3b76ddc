from __future__ import annotations

import pytest

from config.demo import demo_seed
from tests.conftest import console_login


@pytest.mark.django_db(transaction=True)
def test_the_demo_admin_logs_in_to_the_console_in_a_real_browser(live_server, page):
    # given the demo tenant that `kindmem run` creates, with its printed password
    creds = demo_seed()
    # when the admin logs in through the login form
    console_login(page, live_server.url, "admin", creds.passwords["admin"])
    # then the console's index shows, with the tenancy models
    page.wait_for_selector("text=Memory, review and privacy")
    assert "Api keys" in page.content()


@pytest.mark.django_db(transaction=True)
def test_a_wrong_password_does_not_open_the_console(live_server, page):
    demo_seed()
    console_login(page, live_server.url, "admin", "not-the-password")
    page.wait_for_selector(".errornote")
    assert page.url.endswith("/console/login/")
