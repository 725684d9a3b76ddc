"""The Python client's webhooks: an admin registers, lists and deletes endpoints, and a
receiver checks a delivery with `kindmem_client.webhooks.verify_webhook`, which accepts what
kindmem signs (the Standard Webhooks scheme) and refuses a tampered, re-signed or stale one."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from kindmem_client.errors import Forbidden
from kindmem_client.webhooks import WebhookVerificationError, verify_webhook

from tests.clients.conftest import wsgi_client
from webhooks.sending import signed_headers

pytestmark = pytest.mark.usefixtures("keep_the_tests_connection")


def test_an_admin_manages_endpoints_through_the_client(world, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    admin = wsgi_client(world.admin.token)
    created = admin.create_webhook("http://127.0.0.1:9/hook", ["fact.changed"])
    assert created["secret"].startswith("whsec_")
    assert [e["id"] for e in admin.list_webhooks()["endpoints"]] == [created["id"]]
    admin.delete_webhook(created["id"])
    assert admin.list_webhooks()["endpoints"] == []
    with pytest.raises(Forbidden):
        wsgi_client(world.app.token).list_webhooks()


def test_verify_webhook_accepts_kindmems_signature_and_nothing_else():
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = json.dumps({"type": "fact.changed", "data": {"fact_id": "f-1"}}).encode()
    now = datetime.now(tz=UTC)
    headers = signed_headers(secret=secret, msg_id="msg_1", at=now, body=body)
    # as kindmem signed it: the payload
    assert verify_webhook(body, headers, secret)["data"] == {"fact_id": "f-1"}
    # a changed body, another secret, another id, no signature, or an old delivery: refused
    for case in (
        (body.replace(b"f-1", b"f-2"), headers, secret),
        (body, headers, "whsec_" + "A" * 43),
        (body, {**headers, "webhook-id": "msg_2"}, secret),
        (body, {k: v for k, v in headers.items() if k != "webhook-signature"}, secret),
    ):
        with pytest.raises(WebhookVerificationError):
            verify_webhook(*case)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body, headers, secret, now=time.time() + 3600)
