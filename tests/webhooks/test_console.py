"""Webhook endpoints in the console: a tenant's superuser registers one (its secret shown once,
a private address refused as a form error), and an endpoint's page lists its attempts."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.console.conftest import staff_create
from tests.webhooks.receiver import Answer
from tests.webhooks.test_webhooks import make_due, register, send_due, write_fact
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db


def signed_in(world) -> Client:
    client = Client()
    client.force_login(staff_create(world, "hooks", "superuser"))
    return client


def test_an_endpoints_page_lists_its_attempts_and_what_the_receiver_answered(api, world, receiver):
    # given an endpoint whose receiver failed the first attempt and took the second
    created = register(api, world, receiver.url, ["fact.changed"]).json()
    receiver.script = [Answer(status=503)]
    write_fact(world, "likes tea")
    send_due(world)
    make_due(world)
    send_due(world)
    # when its tenant's superuser opens its page
    page = signed_in(world).get(reverse("admin:webhooks_endpoint_change", args=[created["id"]]))
    # then both attempts are listed, with the receiver's answers
    assert page.status_code == 200
    html = page.content.decode()
    assert "Latest attempts" in html
    assert "HTTP 503" in html
    assert "HTTP 204" in html
    assert "fact.changed" in html
    assert created["secret"] not in html


def test_registering_in_the_console_shows_the_secret_once_and_refuses_a_private_address(
    world, settings
):
    client = signed_in(world)
    add = reverse("admin:webhooks_endpoint_add")
    form = {
        "tenant": str(world.tenant.id),
        "url": "http://127.0.0.1:9/hook",
        "events": ["fact.changed", "erasure.completed"],
        "enabled": "on",
        "description": "ops",
    }
    # a loopback address, the operator not having allowed those: the form says why
    refused = client.post(add, form)
    assert refused.status_code == 200
    assert "loopback, private" in refused.content.decode()
    assert not Endpoint.objects.exists()
    # allowed, it is registered and its secret shown once, on the next page
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    done = client.post(add, form, follow=True)
    endpoint = Endpoint.objects.get()
    assert endpoint.events == ["erasure.completed", "fact.changed"]
    assert endpoint.secret in done.content.decode()
    assert endpoint.secret not in client.get(done.redirect_chain[-1][0]).content.decode()
