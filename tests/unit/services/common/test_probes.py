"""A process's probes (``services/common/probes.py``): liveness from the loop's stamp
alone, readiness from its parts, the broker check and the drain, and both served beside
``/metrics`` (``services/common/metrics.py``)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.common import metrics, probes
from services.common.kafka.security import KafkaSecurity
from services.common.probes import STALE_S, Probes
from services.coordinator.shutdown import relaunch_argv


def ready_probes() -> Probes:
    p = Probes()
    p.part("coordinator").assigned()
    p.broker_fault = ""
    return p


def test_health_is_the_loop_turning_and_nothing_else() -> None:
    p = Probes()
    assert p.health(now=100.0)[0], "a process whose loop has not started yet is starting"
    p.beat_at = 100.0
    p.broker_fault = "no answer within 2 s"
    p.draining = "stopping (SIGTERM)"
    ok, body = p.health(now=100.0 + STALE_S - 1)
    assert ok and body["status"] == "ok", "Kafka and the drain never make a process unhealthy"
    ok, body = p.health(now=100.0 + STALE_S + 1)
    assert not ok and "has not turned for" in str(body["detail"])


@pytest.mark.parametrize(("change", "reason"), [
    (lambda p: p.parts.clear(), "starting"),
    (lambda p: p.part("worker cpu"), "worker cpu has not joined its consumer group"),
    (lambda p: p.parts["coordinator"].rebalancing(),
     "coordinator has not joined its consumer group"),
    (lambda p: setattr(p, "broker_fault", None), "Kafka not checked yet"),
    (lambda p: setattr(p, "broker_fault", "no answer within 2 s"),
     "Kafka unreachable: no answer within 2 s"),
    (lambda p: p.drain("stopping (SIGTERM)"), "shutting down (stopping (SIGTERM))"),
    (lambda p: p.part("gateway", lambda: "not connected yet"), "gateway not connected yet"),
])
def test_ready_names_each_reason_it_is_not(change: Any, reason: str) -> None:
    p = ready_probes()
    assert p.ready() == (True, {"status": "ready", "parts": {"coordinator": "ready"}})
    change(p)
    ok, body = p.ready()
    assert not ok and body["status"] == "not ready"
    assert reason in str(body["detail"]), body


def test_the_first_reason_to_drain_is_kept() -> None:
    p = ready_probes()
    p.drain("stopping (SIGTERM)")
    p.drain("worker cpu draining")
    assert p.ready()[1]["detail"] == "shutting down (stopping (SIGTERM))"


def test_a_part_asked_again_is_the_same_and_rejoins_after_a_rebalance() -> None:
    p = ready_probes()
    part = p.part("coordinator")
    assert part is p.parts["coordinator"]
    part.rebalancing()
    assert not p.ready()[0]
    part.assigned()
    assert p.ready()[0]


async def test_the_broker_check_says_unreachable_and_keeps_trying(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No broker listens on the port: the fault is set within a check, and the loop
    goes on (it is cancelled here, not ended by the failure)."""
    monkeypatch.setattr(probes, "BROKER_TIMEOUT_S", 0.5)
    monkeypatch.setattr(probes, "BROKER_CHECK_S", 0.05)
    p = Probes()
    task = asyncio.create_task(p.watch(f"127.0.0.1:{free_port()}", KafkaSecurity()))
    try:
        for _ in range(100):
            if p.broker_fault:
                break
            await asyncio.sleep(0.05)
        assert p.broker_fault, "no fault after 5 s"
        assert p.beat_at is not None
        assert await p.watch("127.0.0.1:1", KafkaSecurity()) is None, "one watch a process"
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Probes]]:
    """The metrics endpoint of a process that has not served yet, over fresh probes."""
    p = Probes()
    started: list[Any] = []
    real = metrics.start_http_server

    def start(port: int, addr: str) -> Any:
        server, thread = real(port, addr)
        started.append(server)
        return server, thread

    monkeypatch.setattr(metrics, "_served", [])
    monkeypatch.setattr(metrics, "PROBES", p)
    monkeypatch.setattr(metrics, "start_http_server", start)
    port = metrics.serve(free_port())
    yield f"http://127.0.0.1:{port}", p
    for server in started:
        server.shutdown()
        server.server_close()


def test_the_probes_are_served_beside_the_metrics(endpoint: tuple[str, Probes]) -> None:
    url, p = endpoint
    health = httpx.get(f"{url}/health", timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    not_ready = httpx.get(f"{url}/ready", timeout=5)
    assert not_ready.status_code == 503
    assert not_ready.headers["content-type"] == "application/json"
    assert "starting" in not_ready.json()["detail"]
    p.part("projector").assigned()
    p.broker_fault = ""
    assert httpx.get(f"{url}/ready?verbose", timeout=5).json() == {
        "status": "ready", "parts": {"projector": "ready"}}
    assert "headwater_dead_letters_total" in httpx.get(f"{url}/metrics", timeout=5).text
    assert httpx.get(f"{url}/nope", timeout=5).status_code == 404


def test_a_restart_starts_the_same_command_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.orig_argv", ["python3", "/venv/bin/headwater", "serve",
                                          "--queue", "cpu"], raising=False)
    monkeypatch.setattr("sys.executable", "/venv/bin/python")
    assert relaunch_argv() == ["/venv/bin/python", "/venv/bin/headwater", "serve",
                               "--queue", "cpu"]
    monkeypatch.setattr("sys.orig_argv", ["python"], raising=False)
    assert relaunch_argv() == ["/venv/bin/python", "-m", "services.coordinator"]
