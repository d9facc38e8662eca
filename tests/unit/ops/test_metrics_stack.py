"""The local stack gives each process that serves its metrics on a port of its own a free,
distinct one, records it in the process's launch record and keeps it across restarts
(``localstack.start``, ``services.common.metrics.stack_port``). The processes are real:
``--help`` makes each exit at once, before it connects to anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ops import localstack
from tests.polling import wait_until


def started(name: str, module: str, *args: str) -> int | None:
    """Start ``python -m module --help`` as ``name``, wait for its exit, and return the
    metrics port its launch record holds."""
    service = localstack.Service(name, (sys.executable, "-m", module, *args, "--help"))
    pid = localstack.start(service)
    wait_until(lambda: not localstack.alive(pid), 60, f"{name}'s exit")
    port: int | None = json.loads(service.launch_file.read_text())["metrics_port"]
    return port


def test_each_process_gets_its_own_metrics_port_and_keeps_it(home: Path) -> None:
    one = started("worker-cpu-1", "services.worker", "--queue", "cpu")
    two = started("worker-cpu-2", "services.worker", "--queue", "cpu")
    assert isinstance(one, int) and isinstance(two, int) and 0 < one != two
    assert started("tool", "json.tool") is None  # not a service with a port of its own
    assert started("worker-cpu-1", "services.worker", "--queue", "cpu") == one
    launched = localstack.launched("worker-cpu-1")
    assert launched is not None and "HEADWATER_METRICS_PORT" not in launched[1]
