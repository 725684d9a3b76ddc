"""The Celery app: tasks autodiscovered per app, JSON only, acks late, settings from Django."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kindmem.settings")

app = Celery("kindmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
