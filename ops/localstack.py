"""The local development stack: Kafka and PostgreSQL (``infra/``) plus the Headwater
processes, started in the background with pid files and stopped by pid.

State lives under ``HEADWATER_HOME`` (default ``<repo>/.headwater``): ``run/<name>.pid``
and ``logs/<name>.log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_TASKS = "examples.stdlib_search.tasks"
def home() -> Path:
    """``HEADWATER_HOME`` or ``<repo>/.headwater``."""
    return Path(os.environ.get("HEADWATER_HOME", REPO / ".headwater"))


@dataclass(frozen=True)
class Service:
    """One Headwater process of the local stack."""

    name: str
    argv: tuple[str, ...]

    @property
    def pid_file(self) -> Path:
        """Where its pid is kept."""
        return home() / "run" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        """Where its output goes."""
        return home() / "logs" / f"{self.name}.log"

    @property
    def launch_file(self) -> Path:
        """How it was started (argv and extra environment), for ``restart``."""
        return home() / "run" / f"{self.name}.launch.json"


def launched(name: str) -> tuple[Service, dict[str, str]] | None:
    """The service ``name`` and the extra environment it was last started with, or None
    if that was not recorded."""
    path = Service(name, ()).launch_file
    try:
        doc = json.loads(path.read_text())
        return Service(name, tuple(doc["argv"])), dict(doc["env"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def default_services(tasks: Sequence[str] = (EXAMPLE_TASKS,), workers: int = 1,
                     queue: str = "cpu") -> list[Service]:
    """Coordinator, gateway and ``workers`` workers of ``queue`` importing ``tasks``."""
    py = sys.executable
    task_args = tuple(arg for module in tasks for arg in ("--tasks", module))
    services = [Service("coordinator", (py, "-m", "services.coordinator")),
                Service("gateway", (py, "-m", "services.gateway"))]
    services += [Service(f"worker-{queue}-{i}", (py, "-m", "services.worker", "--queue", queue,
                                                  *task_args)) for i in range(1, workers + 1)]
    return services


def infra(command: str) -> None:
    """Run ``infra/stack.sh <command>`` (up, down, status). Raises ``CalledProcessError``."""
    subprocess.run(["bash", str(REPO / "infra" / "stack.sh"), command], check=True)


def read_pid(path: Path) -> int | None:
    """The pid in ``path`` if that process is alive, else None."""
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def start(service: Service, env: Mapping[str, str] | None = None) -> int:
    """Start ``service`` unless its pid file names a live process; return its pid."""
    pid = read_pid(service.pid_file)
    if pid is not None:
        return pid
    service.pid_file.parent.mkdir(parents=True, exist_ok=True)
    service.log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(service.log_file, "ab") as log:
        proc = subprocess.Popen(
            service.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=REPO, env={**os.environ, **(env or {})}, start_new_session=True,
        )
    service.pid_file.write_text(str(proc.pid))
    service.launch_file.write_text(json.dumps({"argv": list(service.argv), "env": dict(env or {})}))
    return proc.pid


STOP_TIMEOUT_S = 45.0
"""How long ``stop`` waits after SIGTERM before SIGKILL, seconds: a worker drains for
``HEADWATER_DRAIN_S`` (30 by default) and then needs a few seconds to report what it
stopped."""


def stop(service: Service, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """SIGTERM the pid in the pid file, SIGKILL after ``timeout_s``; True if it was running."""
    pid = read_pid(service.pid_file)
    service.pid_file.unlink(missing_ok=True)
    if pid is None:
        return False
    return stop_pid(pid, timeout_s)


def stop_pid(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """SIGTERM ``pid``, SIGKILL after ``timeout_s``; True if it was running."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
    return True


def running_services() -> list[tuple[str, int]]:
    """``(name, pid)`` of every service whose pid file names a live process."""
    run = home() / "run"
    found = []
    for path in sorted(run.glob("*.pid")) if run.exists() else []:
        pid = read_pid(path)
        if pid is not None:
            found.append((path.stem, pid))
    return found


def stopped_services() -> list[str]:
    """Names of the services whose pid file names a process that is gone: stopped or
    crashed outside ``headwater down`` (which removes the pid file)."""
    run = home() / "run"
    return [path.stem for path in (sorted(run.glob("*.pid")) if run.exists() else [])
            if read_pid(path) is None]


def wait_ready(url: str, timeout_s: float = 90.0, pids: Sequence[int] = ()) -> None:
    """Poll ``url`` (the gateway's ``/ready``) until 200.

    Raises:
        TimeoutError: not ready within ``timeout_s``.
        RuntimeError: one of ``pids`` exited meanwhile.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in pids:
            if not alive(pid):
                raise RuntimeError(f"process {pid} exited; see {home() / 'logs'}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} not ready after {timeout_s} s")
