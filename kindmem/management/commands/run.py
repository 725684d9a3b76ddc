"""`kindmem run`: migrate, seed the demo, then web + worker + beat until Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from kindmem.demo import demo_seed
from kindmem.management.commands.seed_demo import format_credentials


class Command(BaseCommand):
    help = (
        "Run kindmem on one machine: web (gunicorn), the MCP server (uvicorn, kindmem.asgi),"
        " a Celery worker with beat, demo data."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("KINDMEM_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("KINDMEM_PORT", "8000")))
        parser.add_argument(
            "--mcp-port",
            type=int,
            default=int(os.environ.get("KINDMEM_MCP_PORT") or 0),
            help="Where the MCP server (kindmem.asgi) listens; default: --port + 1.",
        )
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo tenant.")

    def handle(
        self, *args: Any, host: str, port: int, mcp_port: int, no_demo: bool, **options: Any
    ) -> None:
        mcp_port = mcp_port or port + 1
        call_command("migrate", interactive=False, verbosity=0)
        call_command("check_database")
        # web and worker log in as the app role; this process migrated as the tables' owner
        env = {**os.environ, "KINDMEM_DATABASE_LOGIN": "app"}
        if "KINDMEM_EMBEDDER" not in os.environ:
            from embeddings import local

            if local.is_installed():
                # The demo searches by meaning when the `local` extra is installed. The demo's
                # facts, written below, are left to the worker (budget 0): this process would
                # otherwise load the model only to seed a handful of facts.
                env["KINDMEM_EMBEDDER"] = settings.EMBEDDER = "local"
                settings.EMBED_BUDGET_MS = 0
        creds = None if no_demo else demo_seed()
        python = sys.executable
        children = [
            subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                [
                    python,
                    "-m",
                    "gunicorn",
                    "-c",
                    "python:kindmem.gunicorn_conf",
                    "kindmem.wsgi",
                    "--bind",
                    f"{host}:{port}",
                    "--workers",
                    "2",
                    "--access-logfile",
                    "-",
                ],
                env=env,
            ),
            # The ASGI app (kindmem/asgi.py): the MCP server at /mcp, beside the same Django app.
            # gunicorn keeps serving the API: its own refusals (limits, malformed requests) are
            # written in kindmem's error shape (kindmem/gunicorn_conf.py), uvicorn's are not.
            subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                [
                    python,
                    "-m",
                    "uvicorn",
                    "kindmem.asgi:application",
                    "--host",
                    host,
                    "--port",
                    str(mcp_port),
                    "--workers",
                    "2",
                ],
                env=env,
            ),
            subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                [
                    python,
                    "-m",
                    "celery",
                    "-A",
                    "kindmem",
                    "worker",
                    "--beat",
                    "--loglevel",
                    "INFO",
                    "--concurrency",
                    "2",
                ],
                env=env,
            ),
        ]
        if creds is not None:
            self.stdout.write(format_credentials(creds, base_url=f"http://{host}:{port}"))
        self.stdout.write(f"MCP server: http://{host}:{mcp_port}/mcp (Authorization: Bearer <key>)")
        self.stdout.write("Press Ctrl-C to stop.")
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [c.args[2] for c in children if c.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            self.stderr.write(f"stopped because {failed} exited")
            sys.exit(1)
