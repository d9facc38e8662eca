"""The local stack's process records (``headwater.localstack``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from headwater import localstack


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
