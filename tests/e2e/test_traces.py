"""One run's OpenTelemetry spans, exported over OTLP/HTTP by every service to a real
OTLP receiver in the test (an HTTP server decoding ``POST /v1/traces`` with the
``opentelemetry-proto`` package's classes), form one trace: the caller's
``traceparent`` -> the gateway's request -> its produce of the submission -> the
coordinator's apply of it -> the dispatch -> the worker's attempt (named by its task) ->
the apply of the attempt's reports (docs/tracing.md); the web UI's static files are not
traced."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from stackkit import Stack, private_stack
from test_kafka_submission import wait_status

from tests.polling import wait_until_async

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CONSUMER, PRODUCER, SERVER = 5, 4, 2  # opentelemetry.proto.trace.v1.Span.SpanKind


@dataclass(frozen=True)
class Got:
    """One received span, as the test reads it."""

    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent: str
    attributes: dict[str, str]


class Receiver:
    """An OTLP/HTTP receiver (protobuf, ``POST /v1/traces``) on a free local port."""

    def __init__(self) -> None:
        self.spans: list[Got] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.add(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, request: ExportTraceServiceRequest) -> None:
        got = []
        for rs in request.resource_spans:
            service = next((a.value.string_value for a in rs.resource.attributes
                            if a.key == "service.name"), "")
            for ss in rs.scope_spans:
                got += [Got(service, s.name, s.kind, s.trace_id.hex(), s.span_id.hex(),
                            s.parent_span_id.hex(),
                            {a.key: a.value.string_value or str(a.value.int_value)
                             for a in s.attributes})
                        for s in ss.spans]
        with self.lock:
            self.spans += got

    def of_trace(self, trace_id: str) -> list[Got]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory,
           services: None) -> Iterator[tuple[Stack, Receiver]]:
    """A stack of the module's own exporting to the receiver."""
    receiver = Receiver()
    try:
        with private_stack(tmp_path_factory.mktemp("traces"), extra_env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_BSP_SCHEDULE_DELAY": "200"}) as stack:
            yield stack, receiver
    finally:
        receiver.server.shutdown()


async def run_traced(stack: Stack, trace_id: str) -> str:
    """Submit a one-node workflow under the caller's trace; return its id once done."""
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post(
            "/v1/workflows", headers={"traceparent": f"00-{trace_id}-{CALLER_SPAN}-01"},
            json={"workflow": {"name": "traced", "nodes": [
                {"id": "s", "task": "e2e.sleep", "input": {"seconds": 0}}]}})
    assert response.status_code == 202, response.text
    workflow_id: str = response.json()["id"]
    assert (await wait_status(stack, workflow_id))["status"] == "succeeded"
    return workflow_id


def ancestors(spans: list[Got], span: Got) -> list[Got]:
    """The span's parents within ``spans``, nearest first."""
    by_id = {s.span_id: s for s in spans}
    found = []
    while span.parent in by_id:
        span = by_id[span.parent]
        found.append(span)
    return found


def one(spans: list[Got], **want: object) -> Got:
    found = [s for s in spans if all(getattr(s, k) == v for k, v in want.items())]
    assert len(found) == 1, (want, spans)
    return found[0]


async def test_the_submission_continues_the_callers_trace(
        traced: tuple[Stack, Receiver]) -> None:
    stack, receiver = traced
    await run_traced(stack, TRACE_ID)
    spans = await wait_until_async(
        lambda: receiver.of_trace(TRACE_ID), 30, "the coordinator's submission span",
        until=lambda ss: any(s.service == "headwater-coordinator" for s in ss))
    request = one(spans, service="headwater-gateway", kind=SERVER,
                  name="POST /v1/workflows")
    assert request.parent == CALLER_SPAN
    send = one(spans, service="headwater-gateway", kind=PRODUCER)
    assert ancestors(spans, send)[-1] == request
    assert send.attributes["messaging.system"] == "kafka"
    assert send.attributes["messaging.destination.name"] == f"{stack.prefix}.submissions"
    apply = one(spans, service="headwater-coordinator", kind=CONSUMER,
                name=f"process {stack.prefix}.submissions")
    assert apply.parent == send.span_id


async def test_each_dispatch_attempt_and_report_join_the_trace(
        traced: tuple[Stack, Receiver]) -> None:
    stack, receiver = traced
    # A trace of its own: the spans of the other test's run, and the order of
    # two processes' exports, must not decide what this one counts.
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4738"
    await run_traced(stack, trace_id)

    def joined(spans: list[Got]) -> bool:
        reports = sum(s.name == f"process {stack.prefix}.reports" for s in spans)
        worker = any(s.service == "headwater-worker" and s.kind == CONSUMER for s in spans)
        return reports >= 2 and worker

    spans = await wait_until_async(
        lambda: receiver.of_trace(trace_id), 30, "the attempt's and the reports' spans",
        until=joined)
    applies = {s.span_id for s in spans if s.service == "headwater-coordinator"
               and s.name == f"process {stack.prefix}.submissions"}
    attempts = [s for s in spans if s.service == "headwater-worker" and s.kind == CONSUMER]
    assert len(attempts) == 1 and all(a.parent in applies for a in attempts), spans
    assert {a.name for a in attempts} == {"e2e.sleep attempt"}  # by task, not by topic
    assert attempts[0].attributes["headwater.node"] == "s"
    assert attempts[0].attributes["headwater.task"] == "e2e.sleep"
    assert attempts[0].attributes["messaging.system"] == "kafka"
    assert attempts[0].attributes["messaging.destination.name"] == f"{stack.prefix}.tasks.cpu"
    reports = [s for s in spans if s.name == f"process {stack.prefix}.reports"]
    assert {r.parent for r in reports} <= {a.span_id for a in attempts}


async def test_the_ui_pages_are_traced_and_their_static_files_are_not(
        traced: tuple[Stack, Receiver]) -> None:
    stack, receiver = traced
    trace_id = "5bf92f3577b34da6a3ce929d0e0e4737"
    parent = {"traceparent": f"00-{trace_id}-{CALLER_SPAN}-01"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        page = await client.get("/ui/", headers=parent)
        assert page.status_code == 200, page.text[:300]
        assets = re.findall(r'(?:src|href)="(/ui/assets/[^"]+)"', page.text)
        assert assets, page.text[:600]
        for asset in assets:
            assert (await client.get(asset, headers=parent)).status_code == 200, asset
        assert (await client.get("/health", headers=parent)).status_code == 200
    spans = await wait_until_async(
        lambda: receiver.of_trace(trace_id), 30, "the gateway's spans of the UI",
        until=lambda ss: any(s.kind == SERVER and "/health" in s.name for s in ss))
    server = [s for s in spans if s.kind == SERVER]
    assert any(s.name.startswith("GET /ui") for s in server), server
    assert not any("/ui/assets" in s.name or "assets" in s.attributes.get("http.route", "")
                   for s in spans), spans
