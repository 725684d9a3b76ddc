"""The no-op task the broker benchmark enqueues (loaded into the worker with --include)."""

from __future__ import annotations

from pathlib import Path

from celery import shared_task


@shared_task(name="bench.touch")
def touch(folder: str, name: str) -> None:
    (Path(folder) / name).touch()
