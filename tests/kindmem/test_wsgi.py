"""The web process as gunicorn loads it: kindmem.wsgi in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.processes import database_env

PROBE = (
    "import gc, kindmem.wsgi;"
    " from django.db import connection;"
    " cursor = connection.cursor(); cursor.execute('SELECT current_user');"
    " print(cursor.fetchone()[0], gc.get_freeze_count())"
)


def load_wsgi(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **database_env(), "SECRET_KEY": "wsgi-test", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
def test_the_web_process_logs_in_as_the_app_role_with_its_startup_heap_frozen() -> None:
    loaded = load_wsgi()
    assert loaded.returncode == 0, loaded.stderr
    role, frozen = loaded.stdout.split()
    # the role row security confines, and what it loaded kept out of the collector's passes
    assert role == settings.KINDMEM_APP_ROLE
    assert int(frozen) > 10_000


@pytest.mark.django_db(transaction=True)
def test_the_web_process_refuses_to_serve_as_the_tables_owner() -> None:
    owner = database_env()["DATABASE_MIGRATION_URL"]
    refused = load_wsgi(DATABASE_URL=owner)
    assert refused.returncode != 0
    assert "refuses to serve" in refused.stderr
    assert "superuser or may bypass row security" in refused.stderr
