"""Where a fact an agent wrote through the facts routes waits for a person.

facts decides *that* an agent's write must wait (`facts.review_reasons`: wide-scope,
instruction-like, hidden-characters) and writes it `review: pending`. The queue a reviewer
works through is the approvals app's, which facts may not import (imports run one way:
kindmem <- facts <- approvals). So approvals plugs its opener in when Django starts
(`ApprovalsConfig.ready`), and facts calls it inside the write's transaction: the pending
revision and its approval commit together or not at all.

Not a signal: there is exactly one queue, the write depends on it, and without one a write
that must wait fails loudly (DESIGN rule 7) rather than land where no reviewer will find it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from facts.models import Revision
    from facts.review_reasons import Finding
    from kindmem.access import Principal


class ReviewQueue(Protocol):
    def __call__(
        self,
        *,
        principal: Principal,
        revision: Revision,
        reasons: list[str],
        findings: list[Finding],
    ) -> uuid.UUID: ...


_queue: ReviewQueue | None = None


def review_queue_connect(queue: ReviewQueue) -> None:
    """Install the review queue (the approvals app does, once, when Django starts)."""
    global _queue
    _queue = queue


def review_open(
    *, principal: Principal, revision: Revision, reasons: list[str], findings: list[Finding]
) -> uuid.UUID:
    """Queue a pending revision an agent's run wrote for review; the approval's id."""
    if _queue is None:
        raise ImproperlyConfigured(
            "No review queue is installed (the approvals app connects one): an agent's write "
            "that must wait for review cannot be accepted."
        )
    return _queue(principal=principal, revision=revision, reasons=reasons, findings=findings)
