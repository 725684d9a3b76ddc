"""Queueing a task when the request's transaction commits, for work a beat sweep resumes.

A request that commits a row and then queues its task must not answer 500 because the broker
cannot be reached: the row has committed, so a client that retries would make a second one.
Every task queued this way has a sweep that finds what its message would have started
(`privacy.tasks.resume_erasures` and `resume_access_exports`, `facts.tasks.embed_backlog`,
`recall.tasks.embed_backlog`), so a publish that fails is logged, and the request answers as if
it had been queued. The publish is bounded (`settings.REQUEST_PUBLISH_RETRY_POLICY`): a dead
broker adds at most about a second to the request.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from celery import Task
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)


def enqueue_on_commit(task: Task, *args: Any, **kwargs: Any) -> None:
    """Queue `task(*args, **kwargs)` once the current transaction commits (at once outside
    one). Only for a task whose work a sweep resumes: a broker that cannot be reached is
    logged as a warning, never raised to the request."""
    transaction.on_commit(functools.partial(enqueue_now, task, *args, **kwargs))


def enqueue_now(task: Task, *args: Any, **kwargs: Any) -> bool:
    """Queue `task(*args, **kwargs)` now, within the request's publish bound; False (and a
    warning naming the task and its arguments, ids only) when the broker cannot be reached."""
    try:
        task.apply_async(args, kwargs, retry_policy=settings.REQUEST_PUBLISH_RETRY_POLICY)
    except OperationalError as exc:  # what Kombu raises once its publish retries are spent
        logger.warning(
            "could not queue %s%r (%s: %s); its sweep will pick it up",
            task.name,
            args,
            exc.__class__.__name__,
            exc,
        )
        return False
    return True
