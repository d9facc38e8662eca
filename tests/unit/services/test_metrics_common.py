"""What the services share of their metrics (``services/common/metrics.py``): the port
settings, the endpoint served once per process, the port the local stack gives each
process, and the cap on label values clients choose."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.common import metrics
from services.coordinator.settings import Settings as CoordinatorSettings
from services.worker.settings import Settings as WorkerSettings

PY = sys.executable


def test_each_service_has_its_default_port_and_the_setting_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_METRICS_PORT", raising=False)
    assert CoordinatorSettings.from_env().metrics_port == metrics.DEFAULT_PORTS["coordinator"]
    assert WorkerSettings.from_env().metrics_port == metrics.DEFAULT_PORTS["worker"]
    assert metrics.port_from_env("projector") == metrics.DEFAULT_PORTS["projector"]
    monkeypatch.setenv("HEADWATER_METRICS_PORT", "0")
    monkeypatch.setenv("HEADWATER_METRICS_HOST", "0.0.0.0")
    worker = WorkerSettings.from_env()
    assert (worker.metrics_port, worker.metrics_host) == (0, "0.0.0.0")


@pytest.mark.parametrize("value", ["http", "70000", "-1"])
def test_a_bad_port_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch,
                                                  value: str) -> None:
    monkeypatch.setenv("HEADWATER_METRICS_PORT", value)
    with pytest.raises(ValueError, match="HEADWATER_METRICS_PORT"):
        metrics.port_from_env("coordinator")


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """A process that has not served yet; the servers started meanwhile are shut down."""
    started: list[Any] = []
    real = metrics.start_http_server

    def start(port: int, addr: str = "0.0.0.0") -> Any:
        server, thread = real(port, addr)
        started.append(server)
        return server, thread

    monkeypatch.setattr(metrics, "_served", [])
    monkeypatch.setattr(metrics, "start_http_server", start)
    yield started
    for server in started:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_endpoint_is_served_once_per_process(servers: list[Any]) -> None:
    port = free_port()
    assert metrics.serve(port) == port
    assert metrics.serve(free_port()) is None  # the projector inside the coordinator
    assert len(servers) == 1
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    assert "# TYPE headwater_dead_letters_total counter" in text


def test_a_taken_port_leaves_the_process_without_an_endpoint(
        servers: list[Any], caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.WARNING, "headwater.metrics"):
            assert metrics.serve(port) is None
    assert f"cannot listen on 127.0.0.1:{port}" in caplog.text
    assert servers == []


def test_port_zero_serves_nothing(servers: list[Any]) -> None:
    assert metrics.serve(0) is None
    assert servers == []


def test_the_stack_gives_its_own_port_to_each_process_that_serves_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_METRICS_PORT", raising=False)
    record = tmp_path / "worker.launch.json"
    worker = (PY, "-m", "services.worker", "--queue", "cpu")
    assert metrics.stack_port((PY, "-m", "services.gateway"), {}, record) is None
    port = metrics.stack_port(worker, {}, record)
    assert isinstance(port, int) and port > 0
    assert metrics.stack_port(worker, {"HEADWATER_METRICS_PORT": "9999"}, record) == 9999
    record.write_text(json.dumps({"argv": list(worker), "env": {}, "metrics_port": port}))
    assert metrics.stack_port(worker, {}, record) == port  # kept across restarts
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert metrics.stack_port(worker, {}, record) not in (None, port)
    monkeypatch.setenv("HEADWATER_METRICS_PORT", "0")
    assert metrics.stack_port(worker, {}, record) == 0  # none for the whole stack


def test_the_first_combinations_keep_their_values_and_later_ones_are_other() -> None:
    bounded = metrics.BoundedLabels(2)
    assert bounded("t.a", "wf") == ("t.a", "wf")
    assert bounded("t.b", "wf") == ("t.b", "wf")
    assert bounded("t.c", "wf") == (metrics.OTHER, metrics.OTHER)
    assert bounded("t.a", "other-wf") == (metrics.OTHER, metrics.OTHER)  # a new pair
    assert bounded("t.a", "wf") == ("t.a", "wf")  # seen before: still its own


def test_a_long_value_is_cut_and_counts_once() -> None:
    bounded = metrics.BoundedLabels(1)
    long = "x" * (metrics.MAX_LABEL_CHARS + 50)
    assert bounded(long) == ("x" * metrics.MAX_LABEL_CHARS,)
    assert bounded(long + "y") == ("x" * metrics.MAX_LABEL_CHARS,)  # the same series


def test_threads_never_get_more_series_than_the_cap() -> None:
    bounded = metrics.BoundedLabels(10)
    kept: list[tuple[str, ...]] = []
    start = threading.Barrier(8)

    def label(worker: int) -> None:
        start.wait()
        kept.extend(v for i in range(200) if (v := bounded(f"t.{worker}.{i}")) != (
            metrics.OTHER,))

    threads = [threading.Thread(target=label, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(kept)) == 10
