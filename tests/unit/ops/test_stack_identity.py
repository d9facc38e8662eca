"""``headwater up`` (and ``restart``) is ready only when the gateway answering on its
port is the one it started: ``GET /health`` names the gateway's ``pid``; another
process answering there is a start failure naming the process, the port and its log,
and ``headwater ps`` shows the process as stopped. Real subprocesses and a real HTTP
server standing in for another stack's gateway, no mocks."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ops import localstack
from ops.cli.app import app
from services.gateway.app import create_app
from services.gateway.settings import Settings
from tests.waiting import wait_until

SLEEPER = (sys.executable, "-c", "import time; time.sleep(120)")
UNREACHABLE = Settings(bootstrap="127.0.0.1:9", pg_dsn="postgresql://postgres@127.0.0.1:9/x")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    yield tmp_path
    for path in (tmp_path / "run").glob("*.pid"):
        localstack.stop(localstack.Service(path.stem, ()), timeout_s=1)


@pytest.fixture
def other_gateway() -> Iterator[str]:
    """Another stack's gateway on a port: ready, its ``/health`` naming this test's pid."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            doc: dict[str, Any] = ({"status": "ok", "pid": os.getpid()}
                                   if self.path == "/health" else {"status": "ready"})
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_health_names_the_gateway_process_and_the_openapi_document_says_so() -> None:
    with TestClient(create_app(UNREACHABLE)) as client:
        assert client.get("/health").json() == {"status": "ok", "pid": os.getpid()}
        answer = client.get("/openapi.json").json()["paths"]["/health"]["get"]["responses"]
    schema = answer["200"]["content"]["application/json"]["schema"]
    assert "pid" in schema["required"] and schema["properties"]["pid"]["type"] == "integer"


def test_a_gateway_that_cannot_bind_fails_the_start_though_another_answers(
        home: Path, other_gateway: str) -> None:
    """The started gateway dies of ``address already in use`` after the readiness check
    was answered by the other gateway (and after the start grace)."""
    port = int(other_gateway.rsplit(":", 1)[1])
    binder = (sys.executable, "-c", "import socket, time\ntime.sleep(4)\n"
              f"socket.socket().bind(('127.0.0.1', {port}))\ntime.sleep(120)")
    localstack.start(localstack.Service("coordinator", SLEEPER))
    localstack.start(localstack.Service("gateway", binder))
    result = CliRunner().invoke(app, ["restart", "--gateway", other_gateway],
                                env={"COLUMNS": "200"})
    assert result.exit_code != 0, result.output
    assert "gateway (pid " in result.output and f"port {port}" in result.output
    assert f"pid {os.getpid()}" in result.output  # who answers instead
    assert "Errno 98" in result.output and "in use" in result.output  # its log's tail
    assert [n for n, _ in localstack.running_services()] == ["coordinator"]
    shown = CliRunner().invoke(app, ["ps"], env={"COLUMNS": "200"}).output
    row = next(line for line in shown.splitlines() if " gateway " in line)
    assert "stopped" in row, shown


def test_a_foreign_answer_stops_the_gateway_that_still_runs(home: Path) -> None:
    pid = localstack.start(localstack.Service("gateway", SLEEPER))
    message = localstack.foreign("http://127.0.0.1:8089/ready", "gateway", pid, 4242,
                                 wait_s=0.3)
    assert not localstack.alive(pid) and localstack.running_services() == []
    assert message.startswith(f"gateway (pid {pid}) stopped: another process (pid 4242) "
                              "answers on port 8089")


def test_ps_shows_a_crashed_process_as_stopped(home: Path) -> None:
    crashed = localstack.start(localstack.Service("coordinator", (sys.executable, "-c", "")))
    wait_until(lambda: not localstack.alive(crashed), 30, "the coordinator's exit")
    gateway = localstack.start(localstack.Service("gateway", SLEEPER))
    (home / "run" / "gateway.pid").unlink()  # as `up` leaves a process that exited
    localstack.stop_pid(gateway, timeout_s=5)
    shown = CliRunner().invoke(app, ["ps"], env={"COLUMNS": "200"}).output
    rows = {line.split()[1]: line for line in shown.splitlines() if line.startswith("│")}
    assert "stopped" in rows["coordinator"] and "stopped" in rows["gateway"], shown


def test_a_worker_is_named_after_its_process_unless_told_otherwise() -> None:
    worker = localstack.worker_services("cpu", ("t",), 2)
    assert [localstack.launch_env(w, {})["HEADWATER_WORKER_NAME"] for w in worker] == [
        "worker-cpu-1", "worker-cpu-2"]
    assert localstack.launch_env(worker[0], {"HEADWATER_WORKER_NAME": "mine"})[
        "HEADWATER_WORKER_NAME"] == "mine"
    gateway = localstack.Service("gateway", (sys.executable, "-m", "services.gateway"))
    assert (localstack.launch_env(gateway, {}).get("HEADWATER_WORKER_NAME")
            == os.environ.get("HEADWATER_WORKER_NAME"))
