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

What leaves the process passes `Scrubbed` first: an exception keeps its type and loses its
message and traceback, and an error status its description, whichever instrumentation recorded
them (a database error quotes the values of the row it refused; a task's error its arguments).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from api.tracing import tracer_install

# The SDK and the instrumentations are imported only when tracing starts: a process with
# tracing off never loads them (about 0.2 s and their memory, per process).
if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

# what a request span would carry of the URL (old and new HTTP conventions): the route instead
URL_ATTRIBUTES = ("http.url", "http.target", "url.full", "url.path", "url.query")

# what an exception event keeps (the message and traceback may quote data)
EXCEPTION_KEPT = ("exception.type", "exception.escaped")

_provider: TracerProvider | None = None


def scrubbed(span: ReadableSpan) -> ReadableSpan:
    """`span` without exception messages, tracebacks or an error's description."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    events = [
        Event(
            event.name,
            {k: v for k, v in (event.attributes or {}).items() if k in EXCEPTION_KEPT}
            if event.name == "exception"
            else event.attributes,
            event.timestamp,
        )
        for event in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class Scrubbed:
    """An exporter (a `SpanExporter`, by its methods) that sends what `exporter` would, each
    span `scrubbed` first."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.exporter.export([scrubbed(span) for span in spans])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


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


def tracing_start(exporter: SpanExporter | None = None) -> TracerProvider | None:
    """Install tracing in this process once: exporting to `exporter` as each span ends (the
    tests' in-memory one), or in batches over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set;
    else nothing (None)."""
    global _provider
    if _provider is not None:
        return _provider
    exporting = exporter is None
    if exporter is None and not tracing_enabled():
        return None
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor: Any = BatchSpanProcessor(cast("SpanExporter", Scrubbed(OTLPSpanExporter())))
    else:
        processor = SimpleSpanProcessor(cast("SpanExporter", Scrubbed(exporter)))
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
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().uninstrument()
    PsycopgInstrumentor().uninstrument()
    CeleryInstrumentor().uninstrument()
    tracer_install(None)
    _provider.shutdown()
    _provider = None
