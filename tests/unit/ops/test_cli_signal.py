"""``headwater signal ID NAME --field k=v ... [--index N] [--id SIGNAL_ID]``: the request
it sends (to a real HTTP server on a free port) and how it reads its options."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ops.cli.app import app, signal_fields

runner = CliRunner()


@dataclass
class Gateway:
    """A stand-in gateway: records each request, answers ``status`` with ``doc``."""

    url: str = ""
    requests: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 202
    doc: dict[str, Any] = field(default_factory=lambda: {"signal_id": "s-1"})


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = Gateway()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            gw.requests.append((self.path, json.loads(self.rfile.read(length))))
            body = json.dumps(gw.doc).encode()
            self.send_response(gw.status)
            content_type = "application/json" if gw.status < 400 else "application/problem+json"
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop's next poll: 0.5 s by default, per test
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    gw.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield gw
    finally:
        server.shutdown()
        server.server_close()


def test_fields_index_and_id_make_the_body(gateway: Gateway) -> None:
    result = runner.invoke(app, [
        "signal", "wf-1", "approval", "--field", "approved=true", "-f", "note=looks good",
        "--field", 'meta={"by": "ann", "n": [1, 2]}', "--field", "count=3",
        "--field", 'quoted="true"', "--field", "empty=", "--index", "2", "--id", "mail-42",
        "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert gateway.requests == [("/v1/workflows/wf-1/signals/approval", {
        "fields": {"approved": True, "note": "looks good", "meta": {"by": "ann", "n": [1, 2]},
                   "count": 3, "quoted": "true", "empty": ""},
        "index": 2, "signal_id": "mail-42"})]
    assert "signal approval sent to wf-1 (signal id s-1)" in result.output


def test_without_options_the_body_has_empty_fields_only(gateway: Gateway) -> None:
    result = runner.invoke(app, ["signal", "wf:a.1", "go", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    # The client chooses the signal's id before the first try (a retry is taken once).
    ((path, body),) = gateway.requests
    assert path in ("/v1/workflows/wf%3Aa.1/signals/go", "/v1/workflows/wf:a.1/signals/go")
    assert body["fields"] == {} and re.fullmatch(r"[0-9a-f]{32}", body["signal_id"])
    assert set(body) == {"fields", "signal_id"}


def test_a_refused_signal_prints_the_problem(gateway: Gateway) -> None:
    gateway.status = 400
    gateway.doc = {"type": "about:blank", "title": "Invalid signal", "status": 400,
                   "detail": "field 'approved': required",
                   "errors": ["field 'approved': required"]}
    result = runner.invoke(app, ["signal", "wf-1", "approval", "--gateway", gateway.url])
    assert result.exit_code == 2
    assert "400 field 'approved': required" in result.output


def test_an_unknown_workflow_exits_1(gateway: Gateway) -> None:
    gateway.status = 404
    gateway.doc = {"title": "Not found", "status": 404, "detail": "no workflow wf-9"}
    result = runner.invoke(app, ["signal", "wf-9", "approval", "--gateway", gateway.url])
    assert result.exit_code == 1
    assert "404 no workflow wf-9" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--field", "approved"], "expected NAME=VALUE"),
    (["--field", "=true"], "expected NAME=VALUE"),
    (["--field", "a=1", "--field", "a=2"], "--field a is given twice"),
    (["--index", "-1"], "Invalid value for '--index'"),
    (["--index", "two"], "Invalid value for '--index'"),
])
def test_bad_options_are_usage_errors_and_nothing_is_sent(gateway: Gateway, args: list[str],
                                                          message: str) -> None:
    result = runner.invoke(app, ["signal", "wf-1", "approval", *args,
                                 "--gateway", gateway.url])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert gateway.requests == []


def test_an_unreachable_gateway_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)  # the client's backoff, not waited
    result = runner.invoke(app, ["signal", "wf-1", "go", "--gateway", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert "cannot reach the gateway at http://127.0.0.1:9" in result.output
    assert len(waits) == 5 and all(w > 0 for w in waits)  # tried again 5 times first


@pytest.mark.parametrize(("pair", "value"), [
    ("a=true", True), ("a=false", False), ("a=null", None), ("a=-2.5", -2.5),
    ("a=[1, \"x\"]", [1, "x"]), ("a=yes", "yes"), ("a={broken", "{broken"),
    ("a=NaN", "NaN"), ("a=Infinity", "Infinity"), ("a=x=y", "x=y"), ("a= 7 ", 7),
])
def test_values_are_json_when_they_parse_else_strings(pair: str, value: Any) -> None:
    assert signal_fields([pair]) == {"a": value}


def test_a_pair_without_a_name_is_refused() -> None:
    with pytest.raises(typer.BadParameter):
        signal_fields(["=1"])
