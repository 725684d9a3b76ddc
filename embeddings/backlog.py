"""The beat sweeps of the embedding backlog (facts' and recall's `embed_backlog`): what the
write path left without a vector and whose task was never queued, because the broker could not
be reached when the write committed (api/background.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from embeddings.providers import EmbeddingFailed
from kindmem.row_security import each_tenant

logger = logging.getLogger(__name__)


def backlog_sweep(tenant_embed: Callable[[str], int], *, what: str) -> int:
    """Run `tenant_embed(tenant_id)` inside each tenant's context; an embedder that fails is
    logged and the sweep goes on to the next tenant (the next run tries again). Returns how
    many `what` (revisions, messages) got a vector."""
    done = 0
    for tenant_id in each_tenant():
        try:
            done += tenant_embed(tenant_id)
        except EmbeddingFailed as exc:
            logger.warning("embedding the %s backlog of tenant %s: %s", what, tenant_id, exc)
    return done
