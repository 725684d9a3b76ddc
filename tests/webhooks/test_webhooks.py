"""Webhooks from the outbox, in one process: registering endpoints, the event written with the
change it announces (or not at all), what a payload carries, the signature a receiver checks,
order per fact, a receiver down then back, a slow one, an address refused, and an erasure."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from prometheus_client import REGISTRY
from standardwebhooks import Webhook, WebhookVerificationError

from config.tasks import refresh_metrics
from facts import services as facts_services
from kindmem.row_security import tenant_context
from privacy import services as privacy_services
from privacy.erasure import erasure_run
from privacy.exports import access_export_build
from privacy.services import erasure_start
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.privacy.conftest import residue_scan
from tests.webhooks.receiver import Answer, Receiver, receiver_running
from webhooks.delivery import delivery_send
from webhooks.models import Delivery, DeliveryStatus, Endpoint, EventKind, OutboxEvent

pytestmark = pytest.mark.django_db


def register(api: Any, world: Any, url: str, events: list[str], **more: Any) -> Any:
    return api.post(
        "/v1/webhooks", {"url": url, "events": events, **more}, format="json", **world.admin.headers
    )


def write_fact(world: Any, content: str, participant: str = "p-hook") -> Any:
    return facts_services.fact_create(
        principal=world.app.principal,
        type="note",
        content=content,
        scope={"project_id": str(world.project.id), "participant_id": participant},
    ).revision


def send_due(world: Any) -> list[str]:
    """Send every delivery of the tenant that may go now, as the worker would, in order."""
    with tenant_context(world.tenant.id):
        ids = list(Delivery.objects.order_by("pk").values_list("pk", flat=True))
        return [delivery_send(delivery_id=pk).status for pk in ids]


def make_due(world: Any) -> None:
    Delivery.objects.filter(tenant_id=world.tenant.id, status=DeliveryStatus.PENDING).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


# ---- registering ----------------------------------------------------------------------------


def test_an_admin_registers_lists_and_deletes_an_endpoint(api, world, receiver):
    # when the tenant admin registers an endpoint
    created = register(api, world, receiver.url, ["fact.changed", "approval.pending"])
    # then its secret is shown once, in Standard Webhooks' form
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["secret"].startswith("whsec_")
    assert body["events"] == ["approval.pending", "fact.changed"]
    assert body["include_content"] is False
    # and the list shows it without the secret
    listed = api.get("/v1/webhooks", **world.admin.headers).json()["endpoints"]
    assert [e["id"] for e in listed] == [body["id"]]
    assert "secret" not in listed[0]
    # and deleting it stops it being listed, and a second delete is a 404
    assert api.delete(f"/v1/webhooks/{body['id']}", **world.admin.headers).status_code == 204
    assert api.get("/v1/webhooks", **world.admin.headers).json()["endpoints"] == []
    again = api.delete(f"/v1/webhooks/{body['id']}", **world.admin.headers)
    assert (again.status_code, again.json()["code"]) == (404, "not-found")


def test_only_a_tenant_admin_manages_endpoints_and_only_their_tenants(
    api, world, other_world, receiver
):
    created = register(api, world, receiver.url, ["fact.changed"]).json()
    for keyed in (world.app, world.user_key):
        refused = api.post(
            "/v1/webhooks",
            {"url": receiver.url, "events": ["fact.changed"]},
            format="json",
            **keyed.headers,
        )
        assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
        assert api.get("/v1/webhooks", **keyed.headers).status_code == 403
    # another tenant's admin neither sees nor deletes it
    assert api.get("/v1/webhooks", **other_world.admin.headers).json()["endpoints"] == []
    gone = api.delete(f"/v1/webhooks/{created['id']}", **other_world.admin.headers)
    assert gone.status_code == 404
    assert Endpoint.objects.filter(pk=created["id"], deleted_at__isnull=True).exists()


def test_bad_input_is_the_error_shape_and_writes_nothing(api, world, receiver):
    for body in (
        {"url": receiver.url, "events": []},
        {"url": receiver.url, "events": ["fact.exploded"]},
        {"url": "ftp://example.com/x", "events": ["fact.changed"]},
        {"url": receiver.url, "events": ["fact.changed"], "colour": "red"},
    ):
        answer = api.post("/v1/webhooks", body, format="json", **world.admin.headers)
        assert answer.status_code == 400, body
        assert set(answer.json()) == {"code", "message", "details"}
        assert answer.json()["code"] == "validation-error"
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_a_url_to_a_loopback_or_private_address_is_refused(api, world, url):
    # given the operator has not allowed private addresses (the default)
    answer = register(api, world, url, ["fact.changed"])
    assert answer.status_code == 400
    assert answer.json()["code"] == "validation-error"
    assert "url" in answer.json()["details"]
    assert not Endpoint.objects.exists()


def test_a_delivery_whose_host_turned_private_is_refused_at_send_time(
    api, world, receiver, settings
):
    # given an endpoint registered while private addresses were allowed
    register(api, world, receiver.url, ["fact.changed"])
    write_fact(world, "likes tea")
    # when the operator turns the switch off, then the delivery goes nowhere
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    send_due(world)
    assert receiver.received == []
    delivery = Delivery.objects.get()
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.last_error.startswith("refused:")


# ---- the outbox -----------------------------------------------------------------------------


def test_the_event_is_written_with_the_change_and_not_for_a_rolled_back_one(api, world, receiver):
    register(api, world, receiver.url, ["fact.changed"])
    # when a write commits, then its event and delivery are there
    revision = write_fact(world, "likes tea")
    event = OutboxEvent.objects.get()
    assert event.data["fact_id"] == str(revision.fact_id)
    assert Delivery.objects.filter(event=event).count() == 1

    # when a write rolls back, then no event or delivery of it remains
    def fail_after_writing() -> None:
        with transaction.atomic():
            write_fact(world, "likes coffee")
            raise RuntimeError("the request failed after the write")

    with pytest.raises(RuntimeError):
        fail_after_writing()
    assert OutboxEvent.objects.count() == 1
    assert Delivery.objects.count() == 1


def test_an_endpoint_hears_only_the_events_it_asked_for(api, world, receiver):
    register(api, world, receiver.url, ["approval.pending"])
    write_fact(world, "likes tea")
    assert not OutboxEvent.objects.exists()


def test_a_payload_carries_ids_and_kinds_unless_the_admin_opted_in(api, world, receiver):
    secret_plain = register(api, world, receiver.url, ["fact.changed"]).json()["secret"]
    with receiver_running() as opted:
        register(api, world, opted.url, ["fact.changed"], include_content=True)
        revision = write_fact(world, "zqmarker likes green tea", participant="p-secret-42")
        send_due(world)
        [plain] = receiver.wait_for(1)
        [full] = opted.wait_for(1)
    # then the default endpoint got ids and kinds only
    assert b"zqmarker" not in plain.body
    assert b"p-secret-42" not in plain.body
    payload = Webhook(secret_plain).verify(plain.body, plain.headers)
    assert payload["type"] == "fact.changed"
    assert payload["data"] == {
        "fact_id": str(revision.fact_id),
        "revision_id": str(revision.pk),
        "version": 1,
        "type": "note",
        "change": "written",
    }
    # and the opted-in one got the content and the scope besides
    data = json.loads(full.body)["data"]
    assert data["content"] == "zqmarker likes green tea"
    assert data["scope"]["participant_id"] == "p-secret-42"


def test_the_signature_verifies_and_a_tampered_body_does_not(api, world, receiver):
    secret = register(api, world, receiver.url, ["fact.changed"]).json()["secret"]
    write_fact(world, "likes tea")
    send_due(world)
    [got] = receiver.wait_for(1)
    # then the receiver verifies it with Standard Webhooks' own package
    assert Webhook(secret).verify(got.body, got.headers)["type"] == "fact.changed"
    assert got.headers["webhook-id"].startswith("msg_")
    # and a body changed on the way, or another secret, fails
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(got.body.replace(b"written", b"deleted"), got.headers)
    other = "whsec_" + "A" * 43
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)


# ---- delivery -------------------------------------------------------------------------------


def test_a_facts_events_arrive_in_order_even_when_the_first_is_retried(api, world, receiver):
    register(api, world, receiver.url, ["fact.changed"])
    revision = write_fact(world, "likes tea")
    facts_services.fact_supersede(
        principal=world.app.principal, fact_id=revision.fact_id, content="likes coffee"
    )
    # given the receiver fails the first attempt
    receiver.script = [Answer(status=500)]
    # when every delivery is tried: the first fails, the second waits behind it
    assert send_due(world) == ["pending", ""]
    assert len(receiver.received) == 1
    # then once the first is due again, it goes, then the second
    make_due(world)
    assert send_due(world) == ["delivered", "delivered"]
    versions = [json.loads(r.body)["data"]["version"] for r in receiver.wait_for(3)]
    assert versions == [1, 1, 2]
    # and each attempt is recorded, the failed one with its answer
    first = Delivery.objects.order_by("pk").first()
    assert [(a.number, a.status_code) for a in first.attempt_rows.order_by("number")] == [
        (1, 500),
        (2, 204),
    ]


def test_a_receiver_that_is_down_gets_its_events_when_it_is_back(api, world, local_receivers):
    with receiver_running() as probe:
        port = probe.port
    # given an endpoint whose receiver is down (nothing listens on its port)
    receiver = Receiver(port=port)
    register(api, world, receiver.url, ["fact.changed"])
    write_fact(world, "likes tea")
    assert send_due(world) == ["pending"]
    delivery = Delivery.objects.get()
    assert delivery.attempts == 1
    assert delivery.next_attempt_at > timezone.now()
    # backoff: each failure waits longer before the next attempt
    make_due(world)
    send_due(world)
    second = Delivery.objects.get()
    assert second.attempts == 2
    first_wait = 0.2
    assert (second.next_attempt_at - timezone.now()).total_seconds() > first_wait
    # when it is back, then the next attempt delivers
    receiver.start()
    try:
        make_due(world)
        assert send_due(world) == ["delivered"]
        assert len(receiver.wait_for(1)) == 1
    finally:
        receiver.stop()


def test_a_slow_receiver_costs_one_timeout_and_the_other_deliveries_go_on(
    api, world, receiver, settings
):
    with receiver_running() as slow:
        slow.script = [Answer(delay_seconds=10)]
        register(api, world, slow.url, ["fact.changed"])
        register(api, world, receiver.url, ["fact.changed"])
        write_fact(world, "likes tea")
        started = time.monotonic()
        outcomes = send_due(world)
        took = time.monotonic() - started
    # then the slow receiver's attempt gave up after about the timeout, the fast one got it
    assert took < settings.WEBHOOK_TIMEOUT_SECONDS + 2
    assert sorted(outcomes) == ["delivered", "pending"]
    assert len(receiver.wait_for(1)) == 1
    timed_out = Delivery.objects.get(endpoint__url=slow.url)
    assert timed_out.last_error == "timed out"


def test_a_deleted_endpoint_is_sent_nothing_more(api, world, receiver):
    created = register(api, world, receiver.url, ["fact.changed"]).json()
    write_fact(world, "likes tea")
    api.delete(f"/v1/webhooks/{created['id']}", **world.admin.headers)
    write_fact(world, "likes coffee")
    assert send_due(world) == [""]
    assert receiver.received == []


# ---- erasure --------------------------------------------------------------------------------


def test_an_erasure_clears_the_persons_queued_and_stored_payloads(api, world, receiver):
    register(api, world, receiver.url, ["fact.changed"], include_content=True)
    write_fact(world, "zqerasehook likes tea", participant="p-erase-hook")
    write_fact(world, "zqkeephook likes tea", participant="p-keep-hook")
    assert residue_scan(["zqerasehook", "p-erase-hook"])
    # when the person is erased
    erasure = erasure_start(
        tenant_id=world.tenant.id,
        target_kind="participant",
        target_id="p-erase-hook",
        reason="asked",
        requested_by="admin:test",
    )
    with tenant_context(world.tenant.id):
        done = erasure_run(erasure_id=erasure.id)
    assert done.status == "completed"
    assert done.receipt["counts_by_kind"]["webhook-event"] == 1
    # then nothing stored names them, and the queued delivery goes without it, marked erased
    assert residue_scan(["zqerasehook", "p-erase-hook"]) == []
    assert residue_scan(["zqkeephook"])
    send_due(world)
    bodies = [json.loads(r.body)["data"] for r in receiver.wait_for(2)]
    erased = [b for b in bodies if b.get("erased")]
    assert len(erased) == 1
    assert "content" not in erased[0]
    assert str(uuid.UUID(erased[0]["fact_id"]))


# ---- every kind of event --------------------------------------------------------------------


def test_review_privacy_and_fact_changes_are_each_announced_without_naming_anyone(
    api, world, receiver
):
    # given an endpoint for every kind of event
    register(api, world, receiver.url, [k.value for k in EventKind])
    declare(world.agent)
    run = factories.run_create(
        world.app, world.project, participant_id="p-kinds-9", thread_id="t-kinds"
    )
    # when an agent's memory waits for review, and a reviewer approves it
    pending = remember(api, run, text="Always refund zqkinds.").json()
    approved = api.post(
        f"/v1/approvals/{pending['approval_id']}/approve", {}, format="json", **world.admin.headers
    )
    assert approved.status_code == 200, approved.json()
    # and the person's data is exported, then erased
    access = privacy_services.access_request_start(
        actor=privacy_services.Actor.of_staff(world.user, world.tenant.id),
        subject_kind="participant",
        subject_id="p-kinds-9",
    )
    with tenant_context(world.tenant.id):
        access_export_build(access_request_id=access.id)
        erasure = erasure_start(
            tenant_id=world.tenant.id,
            target_kind="participant",
            target_id="p-kinds-9",
            reason="asked",
            requested_by="admin:test",
        )
        erasure_run(erasure_id=erasure.id)
    # then each change was announced, in the order it happened
    kinds = list(OutboxEvent.objects.order_by("created_at").values_list("kind", flat=True))
    assert kinds == [
        "approval.pending",
        "fact.changed",
        "approval.decided",
        "access_export.ready",
        "erasure.completed",
    ]
    data = {e.kind: e.data for e in OutboxEvent.objects.all()}
    assert data["approval.pending"]["approval_id"] == pending["approval_id"]
    assert data["approval.decided"]["status"] == "approved"
    assert data["access_export.ready"]["access_request_id"] == str(access.id)
    assert data["erasure.completed"]["erasure_id"] == str(erasure.id)
    # and the receiver got them all, none naming the person or the memory
    send_due(world)
    bodies = [r.body for r in receiver.wait_for(5)]
    assert not [b for b in bodies if b"p-kinds-9" in b or b"zqkinds" in b]


def test_the_worker_counts_waiting_deliveries_for_metrics(api, world, local_receivers):
    with receiver_running() as probe:
        down = probe.url  # nothing listens there any more
    register(api, world, down, ["fact.changed"])
    write_fact(world, "likes tea")
    send_due(world)
    refresh_metrics()
    assert REGISTRY.get_sample_value("kindmem_webhook_deliveries", {"status": "pending"}) == 1.0
    assert REGISTRY.get_sample_value("kindmem_webhook_oldest_pending_age_seconds") >= 0
