from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from kindmem.models import WorkerHeartbeat


@shared_task(
    name="kindmem.tasks.record_heartbeat", soft_time_limit=20, time_limit=30, max_retries=0
)
def record_heartbeat(token: str = "") -> None:
    """Record that a worker is alive (beat queues it every KINDMEM_HEARTBEAT_INTERVAL_SECONDS,
    a worker once when it starts; /healthz reports its age). A `token` (a test's) is kept until
    another token replaces it."""
    WorkerHeartbeat.objects.update_or_create(
        hostname=socket.gethostname(),
        defaults={"seen_at": timezone.now(), **({"token": token} if token else {})},
    )
