"""``headwater up`` (and ``restart``) is ready only when the gateway answering on its
port is the one it started: ``GET /health`` names the gateway's ``pid``; another
process answering there is a start failure naming the process, the port and its log,
and ``headwater ps`` shows the process as stopped. Real subprocesses and a real HTTP
server standing in for another stack's gateway, no mocks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ops import localstack
from ops.cli.app import app
from services.gateway.app import create_app
from services.gateway.settings import Settings
from tests.polling import wait_until
from tests.unit.ops.conftest import SLEEPER, Gateway

UNREACHABLE = Settings(bootstrap="127.0.0.1:9", pg_dsn="postgresql://postgres@127.0.0.1:9/x")


@pytest.fixture
def other_gateway(gateway: Gateway) -> str:
    """Another stack's gateway on a port: ready, its ``/health`` naming this test's pid."""
    gateway.standing["/health"] = (200, {"status": "ok", "pid": os.getpid()})
    gateway.otherwise = (200, {"status": "ready"})
    return gateway.url


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
