from __future__ import annotations

from celery import shared_task

from facts import sweeps


@shared_task(name="facts.tasks.sweep_expired_facts", acks_late=True, time_limit=600)
def sweep_expired_facts() -> int:
    """Beat: invalidate revisions past expires_at (see facts.sweeps)."""
    return sum(sweeps.expiry_sweep().values())


@shared_task(name="facts.tasks.purge_facts", acks_late=True, time_limit=600)
def purge_facts() -> int:
    """Beat: delete ended facts' revisions whose purge delay has passed (see facts.sweeps)."""
    return sum(sweeps.purge().values())
