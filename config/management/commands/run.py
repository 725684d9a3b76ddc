"""`kindmem run`: migrate, seed the demo, then web + worker + beat (and the embedded broker)
under a supervisor until Ctrl-C (config/supervisor.py)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from config import broker
from config.demo import demo_seed
from config.management.commands.seed_demo import format_credentials
from config.scripted_model import SCRIPTED_MODEL
from config.supervisor import Child, Supervisor, die_with_parent, popen_in_own_session

logger = logging.getLogger("config.supervisor")


class Command(BaseCommand):
    help = (
        "Run kindmem on one machine: web (gunicorn's asgi workers), the MCP server (uvicorn),"
        " a Celery worker, beat, demo data."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("KINDMEM_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("KINDMEM_PORT", "8000")))
        parser.add_argument(
            "--mcp-port",
            type=int,
            default=int(os.environ.get("KINDMEM_MCP_PORT") or 0),
            help="Where the MCP server (config.asgi) listens; default: --port + 1.",
        )
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo tenant.")
        parser.add_argument(
            "--scripted-model",
            action="store_true",
            help="Extract with kindmem's scripted demo model (config/scripted_model.py, not a"
            " language model) on --mcp-port + 1, unless KINDMEM_LLM_URL names a real one.",
        )

    def handle(
        self,
        *args: Any,
        host: str,
        port: int,
        mcp_port: int,
        no_demo: bool,
        scripted_model: bool,
        **options: Any,
    ) -> None:
        mcp_port = mcp_port or port + 1
        call_command("migrate", interactive=False, verbosity=0)
        call_command("check_database")
        # web and worker log in as the app role; this process migrated as the tables' owner
        env = {**os.environ, "KINDMEM_DATABASE_LOGIN": "app"}
        # every child counts in files of its own for /metrics (config/metrics.py): emptied now,
        # since a file of an earlier run's process would add its counts to this one's
        if "PROMETHEUS_MULTIPROC_DIR" not in env and settings.METRICS:
            metrics_dir = settings.DATA_DIR / "metrics"
            shutil.rmtree(metrics_dir, ignore_errors=True)
            metrics_dir.mkdir(parents=True)
            env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        if "KINDMEM_EMBEDDER" not in os.environ:
            from embeddings import local, local_onnx

            runtime = local if settings.LOCAL_RUNTIME == "torch" else local_onnx
            if runtime.is_installed():
                # The demo searches by meaning when the `local` extra is installed. The demo's
                # facts, written below, are left to the worker (budget 0): this process would
                # otherwise load the model only to seed a handful of facts.
                env["KINDMEM_EMBEDDER"] = settings.EMBEDDER = "local"
                settings.EMBED_BUDGET_MS = 0
        if settings.EMBEDDER == "local" and settings.LOCAL_RUNTIME != "torch":
            self._convert_local_model()
        scripted_url = None
        if scripted_model and not settings.LLM_URL:
            # every child asks the scripted model, which says in its model name and every
            # answer that it is not a language model (docs/extraction.md)
            scripted_url = f"http://127.0.0.1:{mcp_port + 1}/v1"
            env["KINDMEM_LLM_URL"], env["KINDMEM_LLM_MODEL"] = scripted_url, SCRIPTED_MODEL
        children = self._children(env, host=host, port=port, mcp_port=mcp_port)
        if scripted_url is not None:
            scripted = [sys.executable, "-m", "config.scripted_model", "--port", str(mcp_port + 1)]
            children.insert(
                0, Child(name="scripted-model", start=lambda: popen_in_own_session(scripted, env))
            )
        supervisor = Supervisor(
            children=children,
            state_file=settings.DATA_DIR / "supervisor.json",
            restore_unacked=(
                (lambda: broker.broker_restore_unacked(settings.CELERY_BROKER_URL))
                if self._embedded_broker()
                else None
            ),
            forget_dead=self._forget_dead if settings.EMBEDDED_DATABASE else None,
        )
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            supervisor.start_all()
            # seeded after the broker is up: the demo's facts queue their embedding
            creds = None if no_demo else demo_seed(review_extractions=scripted_url is not None)
            # the credentials come last, after what the children print when they start
            _wait_for_web(host, port, lambda: stopping)
            if creds is not None:
                self.stdout.write(format_credentials(creds, base_url=f"http://{host}:{port}"))
            self.stdout.write(
                f"MCP server: http://{host}:{mcp_port}/mcp (Authorization: Bearer <key>)"
            )
            if scripted_url is not None:
                self.stdout.write(
                    f"Extraction: the SCRIPTED demo model at {scripted_url} (fixed sentence"
                    " patterns, not a language model); set KINDMEM_LLM_URL for a real one."
                )
            self.stdout.write("Press Ctrl-C to stop.")
            self.stdout.flush()
            while not stopping:
                supervisor.tick()
                time.sleep(0.2)
        finally:
            logger.warning("stopping: web, beat, worker, broker, then the database")
            supervisor.stop_all()

    def _convert_local_model(self) -> None:
        """The ONNX file of the local model, made now if this is its first run (once, offline,
        tens of seconds) rather than by the first search of a web process. In a process of
        its own: the weights it reads whole (90 MB) then leave with it."""
        command = [sys.executable, "-m", "embeddings.local_onnx", str(settings.MODEL_CACHE_DIR)]
        command.append(settings.LOCAL_RUNTIME)
        # our own interpreter and module, with arguments from settings
        done = subprocess.run(command, stderr=subprocess.PIPE, text=True, check=False)  # noqa: S603
        if done.returncode != 0:  # the embedder then fails loudly where it is used
            logger.warning("the local model could not be converted: %s", done.stderr[-2000:])

    @staticmethod
    def _embedded_broker() -> bool:
        return broker.is_embedded_url(settings.CELERY_BROKER_URL)

    @staticmethod
    def _forget_dead() -> None:
        from config.embedded_db import forget_dead_handles

        forget_dead_handles(settings.DATA_DIR)

    def _children(self, env: dict[str, str], *, host: str, port: int, mcp_port: int) -> list[Child]:
        python = sys.executable
        children = []
        if self._embedded_broker():
            children.append(
                Child(
                    name="broker",
                    start=lambda: broker.broker_start(
                        data_dir=settings.DATA_DIR,
                        start_new_session=True,
                        preexec_fn=die_with_parent,
                    ),
                )
            )
        # gunicorn's asgi workers (no slow client pins one) with its own refusals (limits,
        # malformed requests) in kindmem's error shape: config/gunicorn_conf.py
        web = [python, "-m", "gunicorn", "-c", "python:config.gunicorn_conf"]
        web += ["config.asgi:application"]
        web += ["--bind", f"{host}:{port}"]
        # no control socket: its default path (~/.gunicorn) is shared by every gunicorn of the user
        web += ["--workers", str(settings.WEB_WORKERS), "--access-logfile", "-"]
        web += ["--no-control-socket"]
        # Warnings and errors only (LOG_LEVEL=INFO shows every task), and no banners: the
        # console stays readable, with the credentials block in sight.
        level = os.environ.get("LOG_LEVEL") or "WARNING"
        celery = [python, "-m", "celery", "-A", "config", "--quiet"]
        worker = [*celery, "worker", "--loglevel", level, "--concurrency", "2"]
        # one worker per broker here: nothing to synchronise with (mingle) or gossip to
        worker += ["--without-mingle", "--without-gossip"]
        beat = [*celery, "beat", "--loglevel", level]
        # The MCP server at /mcp alone, on a port of its own (its clients hold longer requests;
        # config/mcp_server.py), under uvicorn with a head deadline (config/mcp_serve.py).
        mcp = [python, "-m", "config.mcp_serve", "--host", host]
        mcp += ["--port", str(mcp_port), "--workers", str(settings.MCP_WORKERS)]
        # each kind of process names itself to PostgreSQL (pg_stat_activity.application_name)
        web_env = {**env, "KINDMEM_APPLICATION_NAME": "kindmem-web"}
        mcp_env = {**env, "KINDMEM_APPLICATION_NAME": "kindmem-mcp"}
        worker_env = {**env, "KINDMEM_APPLICATION_NAME": "kindmem-worker"}
        beat_env = {**env, "KINDMEM_APPLICATION_NAME": "kindmem-beat"}
        children += [
            Child(name="web", start=lambda: popen_in_own_session(web, web_env)),
            Child(
                name="mcp",
                start=lambda: popen_in_own_session(mcp, mcp_env),
                kill_group_on_death=True,  # uvicorn's worker processes
            ),
            Child(
                name="worker",
                start=lambda: popen_in_own_session(worker, worker_env),
                kill_group_on_death=True,
            ),
            Child(name="beat", start=lambda: popen_in_own_session(beat, beat_env)),
        ]
        return children


def _wait_for_web(host: str, port: int, stopping: Callable[[], bool]) -> None:
    """Until the web's /healthz answers 200 (60 s at most: past that, the supervisor's log and
    /healthz say why), so that what is printed next works at once."""
    from urllib.error import URLError
    from urllib.request import urlopen

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not stopping():
        try:
            with urlopen(f"http://{host}:{port}/healthz", timeout=5):
                return
        except (URLError, OSError):
            pass
        time.sleep(0.2)
