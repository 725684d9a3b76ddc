"""What `kindmem run` does after start-up: keep the web, the worker, beat and the embedded
broker running, each restarted with backoff when it dies, so that background work failing never
takes the API down with it.

- A child that dies is logged (exit code or signal, how long it ran) and started again after
  0.5 s, doubling on each consecutive death up to 30 s; a child that had run for a minute
  starts again from 0.5 s.
- The worker runs in a process group of its own: when it dies, what is left of it (pool
  processes orphaned by a SIGKILL) is killed with it, and, on the embedded broker, whose only
  consumer it is, the messages it had taken and not acknowledged are put back in the queue at
  once (config/broker.py) rather than after the visibility timeout.
- When the embedded broker dies, the worker is stopped with it (its connection and reservations
  are gone), the broker restarts from its append-only file, and then the worker.
- Every child runs in its own session, so a Ctrl-C in the terminal reaches only `kindmem run`,
  which stops the web first (no new work), then beat, the worker (a warm shutdown that puts its
  reserved messages back), then the broker; the embedded PostgreSQL stops last, when this
  process exits.
- The state of every child is written to <KINDMEM_DATA_DIR>/supervisor.json, which /healthz
  reports.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("config.supervisor")

FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
# A child that ran this long before it died is restarted from the first backoff again.
STABLE_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0


def die_with_parent() -> None:
    """In the child, before exec: get SIGTERM if `kindmem run` itself dies (Linux), so a
    SIGKILLed supervisor leaves no orphans holding the port, the socket or the database."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: no such call
        pass


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass
class Child:
    """One supervised process: how to start it and what has happened to it."""

    name: str
    start: Callable[[], subprocess.Popen[bytes]]
    # Kill the whole process group when it dies (its own children would outlive it).
    kill_group_on_death: bool = False
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    consecutive_deaths: int = 0
    restart_at: float | None = None
    last_exit: str | None = None
    last_exit_at: float | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self) -> None:
        self.process = self.start()
        self.started_at = time.monotonic()
        self.restart_at = None

    def kill_leftovers(self) -> None:
        """SIGKILL what remains of the child's process group (it led its own session)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        if not self.running():
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.warning("%s did not stop within %.0f s; killing it", self.name, timeout)
            self.process.kill()
            self.process.wait()
        if self.kill_group_on_death:
            self.kill_leftovers()


class Supervisor:
    """Start, watch and restart the children; stop them in order."""

    def __init__(
        self,
        *,
        children: list[Child],
        state_file: Path | None = None,
        restore_unacked: Callable[[], int] | None = None,
        forget_dead: Callable[[], None] | None = None,
    ) -> None:
        # In start order (the broker first, if there is one); they stop as web, beat, worker,
        # broker. `restore_unacked` puts a dead worker's messages back (the embedded broker
        # only); `forget_dead` drops dead processes from the embedded PostgreSQL's handle list.
        self.children = {child.name: child for child in children}
        self.state_file = state_file
        self.restore_unacked = restore_unacked
        self.forget_dead = forget_dead
        self.stopping = False

    def start_all(self) -> None:
        for child in self.children.values():
            child.launch()
            if child.name == "broker":
                # no worker runs yet: whatever is unacknowledged was left by the last run
                self._restore_worker_messages()
        self.write_state()

    def tick(self) -> None:
        """Reap what died, schedule its restart, start what is due."""
        now = time.monotonic()
        changed = False
        for child in self.children.values():
            if child.process is not None and child.restart_at is None and not child.running():
                self._died(child, now)
                changed = True
        for child in self.children.values():
            if child.restart_at is not None and now >= child.restart_at and not self.stopping:
                if child.name == "worker" and self._broker_down():
                    continue  # the broker comes first; the worker follows it
                child.restarts += 1
                logger.warning("starting %s again (restart %d)", child.name, child.restarts)
                try:
                    child.launch()
                except Exception:  # a start that fails is one more death, retried later
                    logger.exception("%s did not start", child.name)
                    child.process = None
                    child.consecutive_deaths += 1
                    child.restart_at = now + self._backoff(child)
                    continue
                if child.name == "broker":
                    self._restore_worker_messages()
                changed = True
        if changed:
            self.write_state()

    def _broker_down(self) -> bool:
        broker = self.children.get("broker")
        return broker is not None and not broker.running()

    def _died(self, child: Child, now: float) -> None:
        assert child.process is not None
        ran = now - child.started_at
        child.last_exit = describe_exit(child.process.returncode)
        child.last_exit_at = time.time()
        child.consecutive_deaths = 1 if ran >= STABLE_SECONDS else child.consecutive_deaths + 1
        delay = self._backoff(child)
        child.restart_at = now + delay
        logger.error(
            "%s (pid %d) %s after %.0f s; restarting it in %.1f s",
            child.name,
            child.process.pid,
            child.last_exit,
            ran,
            delay,
        )
        if child.kill_group_on_death:
            child.kill_leftovers()
        if self.forget_dead is not None:
            self.forget_dead()
        if child.name == "broker":
            worker = self.children.get("worker")
            if worker is not None and worker.running():
                logger.warning("stopping the worker while the broker restarts")
                assert worker.process is not None
                worker.process.kill()
                worker.process.wait()
                worker.kill_leftovers()
                worker.last_exit = "was stopped because the broker died"
                worker.last_exit_at = time.time()
                worker.restart_at = child.restart_at
        if child.name == "worker" and not self._broker_down():
            self._restore_worker_messages()

    @staticmethod
    def _backoff(child: Child) -> float:
        return min(
            MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** max(0, child.consecutive_deaths - 1)
        )

    def _restore_worker_messages(self) -> None:
        if self.restore_unacked is None:
            return
        try:
            restored = self.restore_unacked()
        except Exception:  # reported, never fatal: the visibility timeout is the fallback
            logger.exception("could not put the dead worker's messages back")
            return
        if restored:
            logger.warning("put %d unacknowledged message(s) of the dead worker back", restored)

    def stop_all(self) -> None:
        self.stopping = True
        # The servers first, the broker last; any other child (the MCP server) with the servers.
        order = ("web", "mcp", "beat", "worker", "broker")
        names = [n for n in self.children if n not in order]
        for name in [*order[:2], *names, *order[2:]]:
            child = self.children.get(name)
            if child is not None:
                child.stop()
        if self.forget_dead is not None:
            self.forget_dead()
        self.write_state()

    def write_state(self) -> None:
        if self.state_file is None:
            return
        state = {
            "pid": os.getpid(),
            "updated_at": time.time(),
            "stopping": self.stopping,
            "children": {
                child.name: {
                    "running": child.running(),
                    "pid": child.pid,
                    "restarts": child.restarts,
                    "last_exit": child.last_exit,
                    "last_exit_at": child.last_exit_at,
                }
                for child in self.children.values()
            },
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_file)  # atomic: /healthz never reads half a file


def popen_in_own_session(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A child in a session of its own (terminal signals reach only `kindmem run`) that dies
    with its parent."""
    return subprocess.Popen(  # noqa: S603 - fixed argv, no shell
        argv, env=env, start_new_session=True, preexec_fn=die_with_parent
    )
