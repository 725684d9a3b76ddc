"""The worker's side of webhooks: send one delivery; the sweep that queues what is due.

Thin, as every task here: each takes ids and calls a service (webhooks/delivery.py), and is
safe to run twice (the claim decides who sends). A retry is a new message with a countdown,
not Celery's retry: the delivery's state in the database says when it is due, so a lost
message costs nothing but the sweep's interval.
"""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from kindmem.row_security import each_tenant, tenant_context
from webhooks.delivery import deliveries_due, delivery_send

# the sweep queues at most this many deliveries per tenant per run
SWEEP_LIMIT = 500


def _time_limits() -> dict[str, float]:
    # a POST is bounded by its socket timeout; the task's own limit is the backstop
    hard = 4 * settings.WEBHOOK_TIMEOUT_SECONDS + 30
    return {"time_limit": hard, "soft_time_limit": hard - 10}


@shared_task(name="webhooks.tasks.deliver_webhook", acks_late=True, max_retries=0, **_time_limits())
def deliver_webhook(delivery_id: int, tenant_id: str) -> str:
    """Send one delivery if it is due and first of its chain; queue its retry, or the next of
    its chain once it is settled."""
    with tenant_context(tenant_id):
        outcome = delivery_send(delivery_id=delivery_id)
    if outcome.retry_in is not None:
        deliver_webhook.apply_async((delivery_id, tenant_id), countdown=outcome.retry_in)
    if outcome.next_in_chain is not None:
        deliver_webhook.delay(outcome.next_in_chain, tenant_id)
    return outcome.status


@shared_task(name="webhooks.tasks.resume_webhooks", time_limit=60, soft_time_limit=50)
def resume_webhooks() -> int:
    """Queue every tenant's deliveries that are due (or will be within the sweep's interval):
    those whose message was lost, never sent, or held by a worker that died. Beat runs it."""
    queued = 0
    for tenant_id in each_tenant():
        for delivery_id, due_in in deliveries_due(limit=SWEEP_LIMIT):
            deliver_webhook.apply_async((delivery_id, tenant_id), countdown=due_in)
            queued += 1
    return queued


@worker_ready.connect
def resume_webhooks_when_a_worker_starts(**_: object) -> None:
    # A worker that starts may be replacing one killed mid-delivery: its deliveries resume as
    # soon as their leases run out, not a beat interval later.
    resume_webhooks.delay()
