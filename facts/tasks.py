"""Background work of facts: embedding revisions the write path could not embed in time, and
the expiry sweep and purge that beat runs."""

from __future__ import annotations

from celery import shared_task

from embeddings.backlog import backlog_sweep
from embeddings.providers import EmbeddingFailed
from facts import sweeps
from facts.embedding import backlog_embed, revisions_embed
from kindmem.row_security import each_tenant, tenant_context


@shared_task(
    acks_late=True,
    autoretry_for=(EmbeddingFailed,),
    retry_backoff=30,
    max_retries=5,
    time_limit=300,
    soft_time_limit=270,
)
def embed_revisions(revision_ids: list[str], tenant_id: str) -> int:
    """Embed the revisions of `revision_ids` (of `tenant_id`) still without a vector of the
    configured model, with other revisions of the tenant waiting in the same provider call;
    safe to run twice."""
    with tenant_context(tenant_id):
        return revisions_embed(revision_ids=revision_ids, top_up_tenant_id=tenant_id)


@shared_task(name="facts.tasks.embed_backlog", acks_late=True, time_limit=300, soft_time_limit=270)
def embed_backlog() -> int:
    """Beat: embed the revisions left `pending` whose `embed_revisions` was never queued (see
    embeddings/backlog.py); a failed provider call marks the oldest `failed`."""
    return backlog_sweep(backlog_embed, what="revisions")


@shared_task(name="facts.tasks.sweep_expired_facts", acks_late=True, time_limit=600)
def sweep_expired_facts() -> int:
    """Beat: invalidate revisions past expires_at (see facts.sweeps)."""
    return sum(sum(sweeps.expiry_sweep().values()) for _ in each_tenant())


@shared_task(name="facts.tasks.purge_facts", acks_late=True, time_limit=600)
def purge_facts() -> int:
    """Beat: delete ended facts' revisions whose purge delay has passed (see facts.sweeps)."""
    return sum(sum(sweeps.purge().values()) for _ in each_tenant())
