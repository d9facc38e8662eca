"""OpenTelemetry traces of the services, carried across Kafka in record headers.

Tracing is off unless the standard OpenTelemetry variables ask for it
(https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/):
``OTEL_TRACES_EXPORTER=otlp``, or an ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) with ``OTEL_TRACES_EXPORTER`` unset; never with
``OTEL_TRACES_EXPORTER=none`` or ``OTEL_SDK_DISABLED=true``. Spans are then exported over
OTLP/HTTP protobuf (``opentelemetry-exporter-otlp-proto-http``, which reads the other
``OTEL_EXPORTER_OTLP_*`` variables itself), and ``service.name`` is the process's
(``headwater-gateway``, ``headwater-coordinator``, ``headwater-worker``) unless
``OTEL_SERVICE_NAME`` names another. Off, every helper here returns at once with
nothing (a ``None`` span, the headers it was given): one global read per call.

The trace context travels in Kafka record headers ``traceparent`` and ``tracestate``, as
W3C Trace Context defines them (https://www.w3.org/TR/trace-context/), and spans follow
the OpenTelemetry messaging semantic conventions
(https://opentelemetry.io/docs/specs/semconv/messaging/messaging-spans/ and
https://opentelemetry.io/docs/specs/semconv/messaging/kafka/): a ``PRODUCER`` span
``send <topic>`` around a produce, a ``CONSUMER`` span ``process <topic>`` around the
handling of one record, child of (and linked to) the context its producer sent, with
``messaging.system=kafka``, ``messaging.destination.name``,
``messaging.operation.type``, ``messaging.operation.name``,
``messaging.kafka.message.key``, ``messaging.destination.partition.id`` and
``messaging.kafka.offset``; a worker's attempt is that ``CONSUMER`` span named
``<task> attempt`` instead. The gateway's HTTP spans are FastAPI's own, but for the web
UI's static files (``UNTRACED_PATHS``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

log = logging.getLogger("headwater.tracing")

Headers = Sequence[tuple[str, bytes]]
"""Kafka record headers: (name, value) pairs."""
TRACE_HEADERS = ("traceparent", "tracestate")
"""The W3C Trace Context headers carried on records."""

UNTRACED_PATHS = ("/ui/assets/",)
"""Path prefixes of gateway requests that get no span: the web UI's static files (each
page load fetches several, and their spans say nothing about a run)."""

_PROPAGATOR = TraceContextTextMapPropagator()
_tracer: trace.Tracer | None = None
_configured = False


def wanted(env: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether the environment asks for traces (see the module's docstring).

    Args:
        env: the variables (None: ``os.environ``).
    """
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",")
                 if e.strip()]
    if exporters:
        return "otlp" in exporters
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure(service_name: str) -> bool:
    """Set up this process's tracer provider and OTLP exporter once, if the environment
    asks for traces; later calls change nothing.

    Args:
        service_name: ``service.name`` of the process's spans unless ``OTEL_SERVICE_NAME``
            is set.

    Returns:
        Whether tracing is on.
    """
    global _tracer, _configured
    if _configured:
        return _tracer is not None
    _configured = True
    if not wanted():
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or service_name
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer("headwater")
    log.info("tracing on: OTLP/HTTP export as service %s", name)
    return True


def untraced(scope: MutableMapping[str, Any]) -> bool:
    """Whether the gateway makes no span for an HTTP request (``UNTRACED_PATHS``).

    Args:
        scope: the request's ASGI scope.
    """
    return str(scope.get("path", "")).startswith(UNTRACED_PATHS)


HTTP_TELEMETRY: TelemetryConfig = {"exclude": untraced}
"""The gateway's ``FastAPI(telemetry=...)``: FastAPI's own request spans, but for
``UNTRACED_PATHS``."""


def tracer() -> trace.Tracer | None:
    """The process's tracer, or None while tracing is off (``configure`` not called, or
    the environment does not ask for traces)."""
    return _tracer


def shutdown() -> None:
    """Export the spans still buffered and stop the exporter (at the process's end)."""
    provider = trace.get_tracer_provider()
    stop = getattr(provider, "shutdown", None)
    if _tracer is not None and stop is not None:
        stop()


class _HeaderGetter(Getter[Headers]):
    """Reads W3C headers out of Kafka record headers (the last of a name wins)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        found = [v.decode(errors="replace") for k, v in carrier or () if k == key and v]
        return found[-1:] or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _ in carrier or ()]


_GETTER = _HeaderGetter()


def extract(headers: Headers | None) -> otel_context.Context | None:
    """The trace context a record's ``traceparent``/``tracestate`` headers carry, or None
    when tracing is off or the record has none (or a malformed one)."""
    if _tracer is None or not headers:
        return None
    ctx = _PROPAGATOR.extract(headers, getter=_GETTER)
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def context_headers(span: trace.Span | None = None) -> list[tuple[str, bytes]]:
    """The ``traceparent`` (and ``tracestate``) headers of ``span``, or of the current
    span when None; ``[]`` when tracing is off or there is no valid span."""
    if _tracer is None:
        return []
    ctx = trace.set_span_in_context(span) if span is not None else None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=ctx)
    return [(k, carrier[k].encode()) for k in TRACE_HEADERS if k in carrier]


def with_context(headers: list[tuple[str, bytes]],
                 span: trace.Span | None = None) -> list[tuple[str, bytes]]:
    """``headers`` followed by the trace context of ``span`` (or the current span), as a
    new list; ``headers`` itself, untouched, when tracing is off."""
    if _tracer is None:
        return headers
    own = [(k, v) for k, v in headers if k not in TRACE_HEADERS]
    return own + context_headers(span)


def message_attributes(topic: str, key: bytes | None, operation: str,
                       partition: int | None = None,
                       offset: int | None = None) -> dict[str, Any]:
    """The messaging semantic conventions' attributes of one Kafka record.

    Args:
        topic: ``messaging.destination.name``.
        key: ``messaging.kafka.message.key`` (UTF-8, left out when None).
        operation: ``messaging.operation.name`` (``send``, ``process``); its type
            (``messaging.operation.type``) is ``send`` or ``process`` too.
        partition: ``messaging.destination.partition.id``.
        offset: ``messaging.kafka.offset``.
    """
    attrs: dict[str, Any] = {"messaging.system": "kafka",
                             "messaging.destination.name": topic,
                             "messaging.operation.name": operation,
                             "messaging.operation.type": operation}
    if key is not None:
        attrs["messaging.kafka.message.key"] = key.decode(errors="replace")
    if partition is not None:
        attrs["messaging.destination.partition.id"] = str(partition)
    if offset is not None:
        attrs["messaging.kafka.offset"] = offset
    return attrs


@contextlib.contextmanager
def producing(topic: str, key: bytes | None) -> Iterator[trace.Span | None]:
    """A ``PRODUCER`` span ``send <topic>``, current inside the block (inject its
    context with ``with_context``); yields None, doing nothing, when tracing is off."""
    if _tracer is None:
        yield None
        return
    with _tracer.start_as_current_span(
            f"send {topic}", kind=trace.SpanKind.PRODUCER,
            attributes=message_attributes(topic, key, "send")) as span:
        yield span


def consuming(topic: str, key: bytes | None, headers: Headers | None,
              partition: int | None = None, offset: int | None = None,
              name: str | None = None) -> trace.Span | None:
    """Start (not end) a ``CONSUMER`` span for one record: a child of the context its
    headers carry, linked to it too (the messaging conventions' link to the creation
    context), or the root of a new trace without one. None when tracing is off. End it
    with ``span.end()``; make it current with ``trace.use_span``.

    Args:
        topic: the record's topic.
        key: its key.
        headers: its headers (``traceparent``, ``tracestate``).
        partition: its partition.
        offset: its offset.
        name: the span's name; ``process <topic>`` when None (a worker's attempt is
            named by its task instead: a map's items would all read alike).
    """
    if _tracer is None:
        return None
    parent = extract(headers)
    links = [trace.Link(trace.get_current_span(parent).get_span_context())] if parent else []
    return _tracer.start_span(name or f"process {topic}", context=parent,
                              kind=trace.SpanKind.CONSUMER, links=links,
                              attributes=message_attributes(topic, key, "process",
                                                            partition, offset))


def trace_id(span: trace.Span | None) -> str:
    """The span's trace id as 32 hex digits, or ``""`` without a valid span."""
    ctx = span.get_span_context() if span is not None else None
    return trace.format_trace_id(ctx.trace_id) if ctx is not None and ctx.is_valid else ""
