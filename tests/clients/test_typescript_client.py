"""The TypeScript client (`clients/typescript`, the npm package `kindmem-client`): its types held
against the served schema, and its own tests run against a live kindmem.

The package's tests (`npm test`: `tsc` builds the package and its tests, then Node's test runner)
need a server and credentials: this module starts kindmem's web process as production does
(gunicorn, on the test database), twice (with the deterministic embedder, and with none, for
`embedding-unavailable`), commits a tenant with an app key, an admin key and a declared agent,
and hands their addresses and tokens to `npm test` in the environment. No worker runs here, so
an erasure the tests start stays in progress (its hold is what they test). The packages come
from the lock file (`npm ci` in clients/typescript; `make test` does it); nothing is downloaded
here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests import factories
from tests.approvals.conftest import declare
from tests.clients.test_python_client_errors import server_codes
from tests.processes import web_server

PACKAGE = Path(settings.BASE_DIR) / "clients" / "typescript"


def npm(*args: str, env: dict[str, str] | None = None, timeout: int = 900) -> str:
    """Run `npm <args>` in the package; its output, or a failure that shows it."""
    assert shutil.which("npm"), "Node.js 20+ and npm are needed for the TypeScript client"
    assert (PACKAGE / "node_modules" / ".package-lock.json").exists(), (
        "the TypeScript client's packages are not installed: `npm ci` in clients/typescript "
        "(.ci/run does it)"
    )
    result = subprocess.run(
        ["npm", *args],
        cwd=PACKAGE,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"npm {' '.join(args)} failed:\n{output[-30000:]}"
    return result.stdout


def test_the_clients_types_are_the_ones_generated_from_the_served_schema(tmp_path):
    # given the schema kindmem serves, as `manage.py spectacular` writes it
    schema = tmp_path / "schema.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    # when the package's generator (openapi-typescript, its `generate` script) writes its types
    generated = tmp_path / "schema.ts"
    npm("run", "--silent", "generate", "--", str(schema), "-o", str(generated), timeout=120)
    # then they are the committed ones
    committed = (PACKAGE / "src" / "schema.ts").read_text()
    assert generated.read_text() == committed, (
        "the API's shapes changed: regenerate the TypeScript client's types, in clients/typescript:"
        " `../../.venv/bin/python ../../manage.py spectacular --format openapi-json --file "
        "/tmp/schema.json && npm run generate -- /tmp/schema.json -o src/schema.ts` (then give a "
        "new route a method and an OPERATIONS row)"
    )


@pytest.mark.django_db(transaction=True)
def test_the_typescript_package_passes_its_tests_against_a_live_kindmem():
    # given a tenant with an app key, an admin key and an agent with memory declarations,
    # committed for the servers' own processes
    tenant = factories.tenant_create()
    project = factories.project_create(tenant)
    app = factories.app_key_create(tenant, [project])
    admin = factories.admin_key_create(tenant)
    agent = declare(factories.agent_create(tenant))
    # and kindmem's web process with an embedder, and one without
    with (
        web_server(env={"KINDMEM_EMBEDDER": "hashing"}) as url,
        web_server("--workers", "1", env={"KINDMEM_EMBEDDER": "none"}) as bare_url,
    ):
        # when the package's tests run against them
        out = npm(
            "test",
            env={
                "KINDMEM_TEST_URL": url,
                "KINDMEM_TEST_BARE_URL": bare_url,
                "KINDMEM_TEST_APP_KEY": app.token,
                "KINDMEM_TEST_ADMIN_KEY": admin.token,
                "KINDMEM_TEST_PROJECT": str(project.id),
                "KINDMEM_TEST_AGENT": agent.agent_id,
                "KINDMEM_TEST_SERVER_CODES": json.dumps(sorted(server_codes())),
            },
        )
    # then every one of them ran and passed (Node's runner writes TAP when not on a terminal)
    summary = dict(re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", out, re.M))
    assert summary.get("fail") == "0", out[-30000:]
    assert summary.get("cancelled") == summary.get("skipped") == summary.get("todo") == "0", out
    assert int(summary["pass"]) == int(summary["tests"]) >= 40, out[-30000:]
