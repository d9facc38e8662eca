"""``services.common.tracing``: off unless the environment asks, free when off, the W3C
context carried through Kafka headers when on, a worker's attempt span named by its task,
and no gateway span for the web UI's static files."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from headwater.context import AttemptInfo, TaskContext
from headwater.core import events as ev
from services.common import tracing
from services.worker.traced_attempt import traced_attempt

HEADERS = [("content-type", b"avro/binary")]


@pytest.mark.parametrize(("env", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, False),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
])
def test_tracing_is_on_only_when_the_environment_asks(env: dict[str, str], on: bool) -> None:
    assert tracing.wanted(env) is on


def test_off_everything_is_a_no_op() -> None:
    assert tracing.tracer() is None
    assert tracing.with_context(HEADERS) is HEADERS
    assert tracing.consuming("t", b"k", [("traceparent", b"00-" + b"1" * 32 + b"-" + b"2" * 16
                                          + b"-01")]) is None
    with tracing.producing("t", b"k") as span:
        assert span is None
    ctx = TaskContext(AttemptInfo("w", "n", None, 1))
    assert ctx.span is trace.INVALID_SPAN
    assert "dispatch=w/n/1" in ctx.log.prefix


@pytest.fixture()
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    yield exporter


def test_a_consumer_span_is_the_child_of_the_producers_context(
        spans: InMemorySpanExporter) -> None:
    with tracing.producing("submissions", b"w-1") as sent:
        headers = tracing.with_context(HEADERS)
    assert headers[0] == HEADERS[0] and [k for k, _ in headers[1:]] == ["traceparent"]
    span = tracing.consuming("submissions", b"w-1", headers, partition=3, offset=7)
    assert span is not None and sent is not None
    span.end()
    produced, consumed = spans.get_finished_spans()
    assert consumed.parent is not None
    assert consumed.parent.span_id == produced.context.span_id
    assert consumed.context.trace_id == produced.context.trace_id
    assert consumed.kind == trace.SpanKind.CONSUMER and produced.kind == trace.SpanKind.PRODUCER
    assert consumed.attributes == {
        "messaging.system": "kafka", "messaging.destination.name": "submissions",
        "messaging.operation.name": "process", "messaging.operation.type": "process",
        "messaging.kafka.message.key": "w-1", "messaging.destination.partition.id": "3",
        "messaging.kafka.offset": 7}
    log = TaskContext(AttemptInfo("w-1", "n", None, 1), span=span).log
    assert log.prefix.startswith(f"[trace={tracing.trace_id(span)} dispatch=w-1/n/1]")


def test_a_record_without_a_context_starts_a_trace(spans: InMemorySpanExporter) -> None:
    for headers in (HEADERS, [*HEADERS, ("traceparent", b"garbage")]):
        span = tracing.consuming("reports", None, headers)
        assert span is not None
        span.end()
        assert spans.get_finished_spans()[-1].parent is None


def test_an_attempt_span_is_named_by_its_task_with_the_messaging_attributes(
        spans: InMemorySpanExporter) -> None:
    with tracing.producing("p.tasks.cpu", b"wf-1/m[7]/2"):
        headers = tracing.with_context(HEADERS)
    dispatch = ev.TaskDispatched("wf-1", "m", 7, 2, "stdlib.search", "cpu", None,
                                 1_700_000_000_000, None, None)
    span = traced_attempt(dispatch, headers, "p.tasks.cpu")
    assert span is not None
    span.end()
    produced, attempt = spans.get_finished_spans()
    assert attempt.name == "stdlib.search attempt"
    assert attempt.kind == trace.SpanKind.CONSUMER
    assert attempt.parent is not None and attempt.parent.span_id == produced.context.span_id
    assert attempt.attributes == {
        "messaging.system": "kafka", "messaging.destination.name": "p.tasks.cpu",
        "messaging.operation.name": "process", "messaging.operation.type": "process",
        "messaging.kafka.message.key": "wf-1/m[7]/2", "headwater.workflow_id": "wf-1",
        "headwater.node": "m", "headwater.attempt": 2, "headwater.dispatch_id": "wf-1/m[7]/2",
        "headwater.task": "stdlib.search"}


def test_other_consumer_spans_keep_the_messaging_name(spans: InMemorySpanExporter) -> None:
    span = tracing.consuming("p.reports", b"wf-1", HEADERS)
    assert span is not None
    span.end()
    assert spans.get_finished_spans()[-1].name == "process p.reports"


@pytest.mark.parametrize(("path", "untraced"), [
    ("/ui/assets/js/main.js", True), ("/ui/assets/css/app.css", True),
    ("/ui/assets/", True), ("/ui", False), ("/ui/runs", False), ("/ui/assetsx", False),
    ("/v1/workflows", False), ("/health", False)])
def test_only_the_ui_static_files_are_untraced(path: str, untraced: bool) -> None:
    assert tracing.untraced({"type": "http", "path": path}) is untraced


def test_fastapi_makes_no_span_for_an_untraced_request() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = FastAPI(telemetry={**tracing.HTTP_TELEMETRY, "tracer_provider": provider})

    @app.get("/ui/assets/{name:path}")
    def asset(name: str) -> str:
        return name

    @app.get("/v1/thing")
    def thing() -> str:
        return "ok"

    with TestClient(app) as client:
        assert client.get("/ui/assets/js/main.js").status_code == 200
        assert client.get("/v1/thing").status_code == 200
    names = {s.name for s in exporter.get_finished_spans()}
    assert "GET /v1/thing" in names
    assert not any("/ui/assets" in n for n in names), names
