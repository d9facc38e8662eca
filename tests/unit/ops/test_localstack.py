"""The local stack's process records (``ops.localstack``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops import localstack


def test_a_started_service_records_how_to_start_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    service = localstack.Service(
        "worker-mine-1", (sys.executable, "-c", "import time; time.sleep(60)"))
    pid = localstack.start(service, {"PYTHONPATH": "/somewhere"})
    try:
        assert localstack.running_services() == [("worker-mine-1", pid)]
        assert localstack.launched("worker-mine-1") == (service, {"PYTHONPATH": "/somewhere"})
    finally:
        assert localstack.stop(service, timeout_s=5)
    assert localstack.running_services() == []
    assert localstack.launched("never-started") is None


def test_a_pid_file_of_a_gone_process_is_a_stopped_service(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    run = tmp_path / "run"
    run.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (run / "coordinator.pid").write_text(gone)
    (run / "gateway.pid").write_text(str(os.getpid()))
    assert localstack.stopped_services() == ["coordinator"]
    assert [name for name, _ in localstack.running_services()] == ["gateway"]


def test_no_run_directory_means_nothing_stopped(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    assert localstack.stopped_services() == []


def test_a_sandbox_stops_its_processes_whatever_home_is_set_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that pointed ``HEADWATER_HOME`` at another sandbox must not leave this
    one's processes running: their pid files are read under the sandbox's own home."""
    from ops.sandbox import Sandbox, stop_sandbox
    mine, other = tmp_path / "mine", tmp_path / "other"
    monkeypatch.setenv("HEADWATER_HOME", str(mine))
    service = localstack.Service("worker-1", (sys.executable, "-c", "import time; time.sleep(60)"))
    pid = localstack.start(service)
    sandbox = Sandbox("tprefix", "postgresql://nowhere/none", "http://nowhere", mine, {},
                      [service])
    monkeypatch.setenv("HEADWATER_HOME", str(other))
    stop_sandbox(sandbox, drop=False)
    assert not localstack.alive(pid)
    assert os.environ["HEADWATER_HOME"] == str(other)
