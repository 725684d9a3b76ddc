"""The web app as ASGI: Django (the API, the console) and the MCP server at `/mcp`.

    uvicorn config.asgi:application --host 127.0.0.1 --port 8001

`kindmem run` starts it so for the MCP server, and under gunicorn's asgi workers for the API and
the console (config/gunicorn_conf.py; docs/agents.md "MCP server"). Requests to `/mcp` go to the
MCP server (config/mcp_server.py), whose tools call the API's own routes through Django's ASGI
handler in this process; everything else goes to Django. The lifespan runs the MCP SDK's
session manager; Django needs none.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

from django.core.asgi import get_asgi_application
from starlette.types import Receive, Scope, Send

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# web processes log in as the app role, which row security confines (kindmem/row_security.py)
os.environ.setdefault("KINDMEM_DATABASE_LOGIN", "app")
# ...from a bounded pool of connections of the process's own (config/pool.py), named for the
# process's kind in pg_stat_activity
os.environ.setdefault("KINDMEM_DATABASE_POOL", "1")
os.environ.setdefault("KINDMEM_APPLICATION_NAME", "kindmem-asgi")
# traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (config/tracing.py): before the app loads
# its middleware, which the Django instrumentation joins
from config.tracing import tracing_start

tracing_start()
django_app = get_asgi_application()

# As config.wsgi: refuse to serve on a database that could lose committed memory, or lacks
# pgvector 0.8, or as a login that row security does not confine.
from django.conf import settings  # noqa: E402

from api.errors import error_body  # noqa: E402
from config.admission import Admission, admitting  # noqa: E402
from config.collector import tune_for_serving  # noqa: E402
from config.durability import assert_confined_login, assert_durable_database  # noqa: E402
from config.mcp_server import MCP_PATH, mcp_app  # noqa: E402
from config.request_bodies import BodyRefused, answer_refusal, body_limited  # noqa: E402


def _refuse_unsafe_database() -> None:
    from django.db import connection

    try:
        assert_durable_database()
        assert_confined_login()
    finally:
        connection.close()


try:
    asyncio.get_running_loop()
except RuntimeError:
    _refuse_unsafe_database()
else:
    # uvicorn's worker processes import the app inside their event loop, where Django refuses
    # a synchronous query: the same checks, in a thread of their own (their error still stops
    # the import).
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_refuse_unsafe_database).result()

# Past KINDMEM_MAX_IN_FLIGHT requests at once, the next is answered 503 (config/admission.py).
admission = Admission(settings.MAX_IN_FLIGHT)
mcp = mcp_app(admission)

# As config.wsgi: what is loaded now lives as long as the process (config/collector.py).
tune_for_serving()


def is_mcp(scope: Scope) -> bool:
    path = scope.get("path", "")
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


async def route(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan" or is_mcp(scope):
        await mcp(scope, receive, send)
    else:
        # Django's stubs type the ASGI scope and send more narrowly than the spec
        await django_app(scope, receive, send)  # type: ignore[arg-type]


# A body past KINDMEM_MAX_BODY_BYTES, declared or chunked, is answered 413, one not whole within
# KINDMEM_BODY_TIMEOUT_SECONDS 408 (config/request_bodies.py), before the request is admitted:
# a slow body holds no in-flight slot. Past KINDMEM_MAX_IN_FLIGHT requests at once, the next is
# answered 503 (config/admission.py). The MCP server reads its own bodies and admits its own
# requests, once their credential is checked.
async def route_mcp_only(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan" or is_mcp(scope):
        await mcp(scope, receive, send)
    else:
        await answer_refusal(send, NOT_ON_THIS_PORT)


NOT_ON_THIS_PORT = BodyRefused(
    404,
    error_body(
        "not-found", "This port serves the MCP server at /mcp only; the API is on the web's."
    ),
)

# The MCP server's own port (config/mcp_serve.py): /mcp alone, so the API and the console are
# reached only through the web's server and its hardening (config/gunicorn_conf.py).
mcp_application = route_mcp_only

application = body_limited(
    admitting(route, admission=admission, exempt=is_mcp),
    limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    deadline=settings.BODY_TIMEOUT_SECONDS,
    exempt=is_mcp,
)
