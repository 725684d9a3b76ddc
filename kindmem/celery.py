"""The Celery app: tasks autodiscovered per app, JSON only, acks late, settings from Django."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kindmem.settings")

app = Celery("kindmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_a_database_that_is_not_durable(**_: object) -> None:
    from kindmem.durability import assert_confined_login, assert_durable_database

    assert_durable_database()
    assert_confined_login()
