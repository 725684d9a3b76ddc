"""The documentation is executable: the shell examples of README.md and of every docs/ page run
in reading order (tests/documentation.py), as written, against a live `kindmem run` with the
demo tenant, and none answers an error."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests import documentation
from tests.extraction.chat_server import add, chat_server_running
from tests.kindmem.test_supervisor import _call, _free_port
from tests.processes import database_env

ROOT = Path(__file__).resolve().parents[2]
# Blocks a reader runs elsewhere: the two make commands, docker compose.
NOT_HERE = re.compile(r"^(make|docker|SECRET_KEY=)", re.MULTILINE)


def runnable(blocks: list[str]) -> list[str]:
    return [b for b in blocks if not NOT_HERE.search(b)]


def shell_examples() -> list[str]:
    return runnable(documentation.blocks("sh"))


def test_the_docs_have_shell_examples_beyond_make_and_readme_its_first_calls():
    assert len(shell_examples()) >= 5
    readme = runnable(documentation.fenced(documentation.README.read_text(), "sh"))
    assert any("/v1/remember" in b for b in readme), "README lost its first calls"


def _remember_the_last_message(shown: dict) -> list[dict]:
    """The extraction example's chat model (a scripted local OpenAI-compatible server): a note
    of the newest message it is shown, citing it."""
    last = shown["messages"][-1]
    return [add("note", last["text"].replace("I ", "The customer ", 1), [last["id"]])]


@pytest.mark.django_db(transaction=True)
def test_every_shell_example_in_the_docs_runs_against_a_live_server(tmp_path):
    # given `kindmem run` with its demo tenant, on the test database, and a local
    # OpenAI-compatible chat server as its extraction model
    chat = ExitStack()
    llm = chat.enter_context(chat_server_running())
    llm.answer(_remember_the_last_message)
    port = _free_port()
    env = {
        **os.environ,
        **database_env(),
        "KINDMEM_DATABASE_LOGIN": "migration",
        "SECRET_KEY": "test-readme",
        "KINDMEM_DATA_DIR": str(tmp_path),
        "KINDMEM_EMBEDDER": "hashing",
        "KINDMEM_LLM_URL": llm.url,
        "KINDMEM_LLM_MODEL": "fake-llm-1",
    }
    env.pop("CELERY_BROKER_URL", None)
    out_path = tmp_path / "run.log"
    with out_path.open("wb") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "config.cli", "run", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 180
        while "Press Ctrl-C" not in out_path.read_text(errors="replace"):
            assert run.poll() is None, out_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "kindmem run did not start within 180 s"
            time.sleep(0.5)
        printed = out_path.read_text(errors="replace")
        keys = dict(re.findall(r"^\s+(admin|app)\s+(kmk_\S+)", printed, re.MULTILINE))
        project = re.search(r"project:.*\(([0-9a-f-]{36})\)", printed).group(1)
        # the demo people the privacy example names are printed
        assert re.search(r"^\s+demo-customer-1\s", printed, re.MULTILINE), printed[-2000:]
        health = _call(f"http://127.0.0.1:{port}/healthz")
        assert health[0] == 200, health
        # when the documentation's shell examples run in order, with what `make run` printed
        # filled in, and curl failing on any HTTP error
        script = "\n".join(shell_examples())
        script = script.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        script = script.replace("localhost:8000", f"127.0.0.1:{port}")
        script = script.replace(".venv/bin/kindmem", f"{sys.executable} -m config.cli")
        script = re.sub(r"^APP_KEY=kmk_\.\.\.", f"APP_KEY={keys['app']}", script, flags=re.M)
        script = re.sub(r"^ADMIN_KEY=kmk_\.\.\.", f"ADMIN_KEY={keys['admin']}", script, flags=re.M)
        script = re.sub(r"^PROJECT=\.\.\.", f"PROJECT={project}", script, flags=re.M)
        assert "..." not in re.sub(r"#.*", "", script), "a placeholder the docs leave unfilled"
        prelude = (
            "set -euo pipefail\n"
            'curl() { local rc=0; command curl --fail-with-body "$@" || rc=$?; echo; return $rc; }'
            "\n"
        )
        shell_env = {**env, "KINDMEM_DATABASE_LOGIN": "migration", "PYTHONPATH": str(ROOT)}
        result = subprocess.run(
            ["bash", "-c", prelude + script],
            env=shell_env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        # then every command succeeded, and none answered an error body
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert '"code":' not in result.stdout, result.stdout[-3000:]
        compact = result.stdout.replace(" ", "")
        assert '"hits":[]' not in compact, "an example found nothing"
        assert '"nothing_matches":false' in compact, "the erasure example is about no one"
        # and the extraction example was answered by the model, and applied
        assert llm.chats, "the extraction example never reached the chat model"
        assert '"status":"applied"' in compact, "the extraction example was not applied"
    finally:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
        chat.close()


def test_the_docs_list_every_error_code_the_api_answers():
    from tests.clients.test_python_client_errors import server_codes

    text = "\n".join(page.read_text() for page in documentation.pages())
    missing = sorted(code for code in server_codes() if f"`{code}`" not in text)
    assert missing == []
