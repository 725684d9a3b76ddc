from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

START = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
    "django.setup(); from django.db import connection; "
    "connection.ensure_connection(); print('started')"
)


def _start(data_dir: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["KINDMEM_DATA_DIR"] = data_dir
    return subprocess.run(
        [sys.executable, "-c", START],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_process_killed_while_writing_the_handle_list_does_not_stop_later_starts(tmp_path):
    # given an embedded server that ran once, and a handle list left torn by a killed process
    first = _start(str(tmp_path))
    assert first.returncode == 0, first.stderr[-2000:]
    (tmp_path / "pgdata" / ".handle_pids.json").write_text("")
    # when kindmem starts again
    second = _start(str(tmp_path))
    # then it starts, and stops the server when it exits
    assert second.returncode == 0, second.stderr[-2000:]
    assert "started" in second.stdout
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists()


def test_loading_the_settings_starts_no_database(tmp_path):
    # given a data folder where no embedded server has run, and no DATABASE_URL
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["KINDMEM_DATA_DIR"] = str(tmp_path)
    # when a process loads the settings and runs a check that needs no database
    done = subprocess.run(
        [sys.executable, "-m", "config.cli", "check"],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then it answers, and no server was started (no cluster was even made)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "pgdata").exists()
