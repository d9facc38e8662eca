"""Memory of ``headwater serve`` against the same parts as separate processes.

Starts, on the local stack's Kafka and PostgreSQL (a fresh topic prefix and database
each), first one ``python -m services.serve --queue cpu`` process, then a gateway, a
coordinator (``HEADWATER_PROJECTION=off``), a projector and a worker of queue cpu, all
with the example's tasks; waits until each is ready, runs ``RUNS`` workflows through the
gateway, lets them settle, and reads each process's resident (RSS) and proportional
(PSS: shared pages split among the processes that map them) set sizes from
``/proc/<pid>/smaps_rollup``. Prints one JSON object.

    .venv/bin/python -m load.serve_memory
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ops.localstack import Service
from ops.sandbox import Sandbox, empty_sandbox, free_port, home_kept, stop_sandbox

TASKS = "examples.stdlib_search.tasks"
RUNS = 20
SETTLE_S = 5.0
FLOW = {"name": "memory", "nodes": [
    {"id": "a", "task": "stdlib.list_modules", "input": {"limit": 5}}]}
PY = sys.executable
SEPARATE = {
    "gateway": ((PY, "-m", "services.gateway"), {}),
    "coordinator": ((PY, "-m", "services.coordinator"), {"HEADWATER_PROJECTION": "off"}),
    "projector": ((PY, "-m", "services.projector"), {}),
    "worker": ((PY, "-m", "services.worker", "--queue", "cpu", "--tasks", TASKS), {}),
}
ONE = {"serve": ((PY, "-m", "services.serve", "--queue", "cpu", "--tasks", TASKS), {})}


def memory_kib(pid: int) -> dict[str, int]:
    """``Rss`` and ``Pss`` of ``pid``, KiB (``/proc/<pid>/smaps_rollup``)."""
    found = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss"):
            found[key.lower()] = int(rest.split()[0])
    return found


def wait_ready(urls: list[str], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    for url in urls:
        while True:
            try:
                if httpx.get(url, timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} not ready within {timeout_s:g} s")
            time.sleep(0.5)


def run_flows(gateway: str) -> None:
    ids = []
    for _ in range(RUNS):
        answer = httpx.post(f"{gateway}/v1/workflows", json={"workflow": FLOW}, timeout=30)
        answer.raise_for_status()
        ids.append(answer.json()["id"])
    deadline = time.monotonic() + 120
    for wid in ids:
        while httpx.get(f"{gateway}/v1/workflows/{wid}", timeout=30).json().get(
                "status") != "succeeded":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{wid} did not succeed")
            time.sleep(0.2)


def measure(box: Sandbox, services: dict[str, tuple[tuple[str, ...], dict[str, str]]]
            ) -> dict[str, dict[str, int]]:
    """Start ``services`` in ``box``, wait, run the flows, and read each one's memory."""
    pids, urls = {}, [f"{box.gateway}/ready"]
    for name, (argv, env) in services.items():
        port = free_port()
        pids[name] = box.start(Service(name, argv), {**env, "HEADWATER_METRICS_PORT": str(port)})
        if name != "gateway":
            urls.append(f"http://127.0.0.1:{port}/ready")
    wait_ready(urls)
    run_flows(box.gateway)
    time.sleep(SETTLE_S)
    return {name: memory_kib(pid) for name, pid in pids.items()}


def main() -> None:
    figures = {}
    for label, services in (("serve", ONE), ("separate", SEPARATE)):
        with home_kept(), tempfile.TemporaryDirectory() as home:
            box = empty_sandbox(Path(home))
            try:
                figures[label] = measure(box, services)
            finally:
                stop_sandbox(box)
    total = {label: {k: sum(p[k] for p in procs.values()) for k in ("rss", "pss")}
             for label, procs in figures.items()}
    print(json.dumps({"runs": RUNS, "kib": figures, "total_kib": total,
                      "python": sys.version.split()[0]}, indent=2))


if __name__ == "__main__":
    main()
