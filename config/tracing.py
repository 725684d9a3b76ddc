"""OpenTelemetry traces: on when OTEL_EXPORTER_OTLP_ENDPOINT is set, off (nothing installed,
nothing paid) otherwise.

On, each process (the ASGI/WSGI web processes, each Celery worker process) exports spans with
OTLP over HTTP (the exporter reads OTEL_EXPORTER_OTLP_* and OTEL_SERVICE_NAME itself) for:
- each request (Django's instrumentation, ASGI included), named and tagged by its route
  pattern: the URL's path and query, which hold ids and search words, are replaced by the
  pattern (`_route_only`);
- its SQL (psycopg's: the statement with its placeholders, never the values);
- Celery tasks, published and run, the run a child of the request that queued it (the trace
  context travels in the message's headers);
- the memory operations (api/tracing.py), whose attributes are allow-listed there: never
  content, a query or a person's id.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from api.tracing import tracer_install

# what a request span would carry of the URL (old and new HTTP conventions): the route instead
URL_ATTRIBUTES = ("http.url", "http.target", "url.full", "url.path", "url.query")

_provider: TracerProvider | None = None


def _route_only(span: Any, request: Any, response: Any) -> None:
    if not span.is_recording():
        return
    match = getattr(request, "resolver_match", None)
    route = f"/{match.route}" if match is not None else "unmatched"
    present = getattr(span, "attributes", None) or {}
    for name in URL_ATTRIBUTES:
        if name in present:
            span.set_attribute(name, "" if name == "url.query" else route)


def tracing_enabled() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def tracing_start(processor: SpanProcessor | None = None) -> TracerProvider | None:
    """Install tracing in this process once: with `processor` (the tests' in-memory one), or
    OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; else nothing (None)."""
    global _provider
    if _provider is not None:
        return _provider
    exporting = processor is None
    if processor is None:
        if not tracing_enabled():
            return None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter())
    provider = TracerProvider(
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "kindmem")})
    )
    provider.add_span_processor(processor)
    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=_route_only)
    PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    tracer_install(provider.get_tracer("kindmem"))
    if exporting:  # the process's own (a test's provider is not made the global one)
        trace.set_tracer_provider(provider)
    _provider = provider
    return provider


def tracing_stop() -> None:
    """Undo `tracing_start` (the tests)."""
    global _provider
    if _provider is None:
        return
    DjangoInstrumentor().uninstrument()
    PsycopgInstrumentor().uninstrument()
    CeleryInstrumentor().uninstrument()
    tracer_install(None)
    _provider.shutdown()
    _provider = None
