"""The local development stack: Kafka and PostgreSQL (``infra/``) plus the Headwater
processes, started in the background with pid files and stopped by pid.

State lives under ``HEADWATER_HOME`` (default ``<repo>/.headwater``): ``run/<name>.pid``,
``run/<name>.launch.json`` (how it was last started), ``logs/<name>.log``, and
``stack.json``, the workers the stack remembers (``ops.stackstate``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    return [Service("coordinator", (py, "-m", "services.coordinator")),
            Service("gateway", (py, "-m", "services.gateway")),
            *worker_services(queue, tasks, workers)]


def worker_services(queue: str, tasks: Sequence[str], count: int = 1) -> list[Service]:
    """``worker-<queue>-1`` to ``worker-<queue>-<count>``, each importing ``tasks``."""
    task_args = tuple(arg for module in tasks for arg in ("--tasks", module))
    return [Service(f"worker-{queue}-{i}", (sys.executable, "-m", "services.worker",
                                             "--queue", queue, *task_args))
            for i in range(1, count + 1)]


def worker_of(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """``(queue, task modules)`` of a ``python -m services.worker`` command line, or None
    for any other process (``--queue Q`` and ``--tasks M`` only; a worker that takes them
    from ``HEADWATER_QUEUE``/``HEADWATER_TASKS`` shows as queue ``""``)."""
    if list(argv[1:3]) != ["-m", "services.worker"]:
        return None
    queue, tasks = "", []
    for flag, value in itertools.pairwise(argv[3:]):
        if flag == "--queue":
            queue = value
        elif flag == "--tasks":
            tasks.append(value)
    return queue, tasks


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
    """Start ``service`` unless its pid file names a live process; return its pid.

    Its environment is ``launch_env``'s with a metrics port of its own (``stack_port``);
    the launch record keeps ``env`` as given, and that ``metrics_port``."""
    pid = read_pid(service.pid_file)
    if pid is not None:
        return pid
    from services.common.metrics import stack_port  # here: the quick commands skip it
    port = stack_port(service.argv, env or {}, service.launch_file)
    own = {} if port is None else {"HEADWATER_METRICS_PORT": str(port)}
    service.pid_file.parent.mkdir(parents=True, exist_ok=True)
    service.log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(service.log_file, "ab") as log:
        proc = subprocess.Popen(
            service.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=REPO, env=launch_env(service, {**own, **(env or {})}), start_new_session=True,
        )
    service.pid_file.write_text(str(proc.pid))
    service.launch_file.touch(mode=0o600)  # it may hold HEADWATER_TOKEN
    service.launch_file.chmod(0o600)
    service.launch_file.write_text(json.dumps({"argv": list(service.argv), "env": dict(env or {}),
                                               "metrics_port": port}))
    return proc.pid


def launch_env(service: Service, env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``service`` starts with: this process's, then for a worker
    (``python -m services.worker``) ``HEADWATER_WORKER_NAME`` set to its process name, so
    that its id in reports and ``GET /v1/queues`` is ``<name>-<pid>``, as ``headwater ps``
    names it (with its pid), then ``env``."""
    own = {"HEADWATER_WORKER_NAME": service.name} if worker_of(service.argv) else {}
    return {**os.environ, **own, **env}


STOP_TIMEOUT_S = 45.0
"""How long ``stop`` waits after SIGTERM before SIGKILL, seconds: a worker drains for
``HEADWATER_DRAIN_S`` (30 by default) and then needs a few seconds to report what it
stopped."""


KILL_WAIT_S = 5.0
"""How long ``stop_all`` waits for killed processes to be gone, seconds."""


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


def stop_all(services: Sequence[Service], timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
    """SIGTERM every running one of ``services`` at once, wait up to ``timeout_s`` for all
    of them (a worker drains meanwhile), then SIGKILL those left.

    Returns:
        The names of those that were running, in the order given.
    """
    pids: dict[str, int] = {}
    for service in services:
        pid = read_pid(service.pid_file)
        service.pid_file.unlink(missing_ok=True)
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        pids[service.name] = pid
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids.values():
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)  # SIGKILL is delivered asynchronously
    return list(pids)


def log_tail(name: str, lines: int = 8) -> str:
    """The last ``lines`` lines of process ``name``'s log (its error text when it died at
    start), or ``""`` when it has none. Reads at most the last 64 KiB."""
    path = Service(name, ()).log_file
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


FOREIGN_WAIT_S = 20.0
"""How long ``wait_ready`` lets the gateway it waits for exit by itself once another
process answers on its port, seconds (its log then says why: ``address already in
use``); then it is stopped."""


def wait_ready(url: str, timeout_s: float = 90.0,
               pids: Sequence[int] | Mapping[str, int] = (), owner: str | None = None,
               ) -> None:
    """Poll ``url`` (the gateway's ``/ready``) until 200.

    Args:
        url: the readiness URL.
        timeout_s: how long to wait, seconds.
        pids: processes that must stay alive meanwhile; given as ``{name: pid}``, the
            error names the process and quotes the tail of its log.
        owner: the name in ``pids`` of the gateway started: ready only once ``/health``
            beside ``url`` answers with its ``pid``. Another process answering there
            (the port was taken) is an error, and ``owner`` is stopped.

    Raises:
        TimeoutError: not ready within ``timeout_s``.
        RuntimeError: one of ``pids`` exited meanwhile, or another process than
            ``owner`` answers on its port.
    """
    import httpx  # here: the command line's fast commands import this module

    labelled = isinstance(pids, Mapping)
    named = dict(pids) if isinstance(pids, Mapping) else {f"process {p}": p for p in pids}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, pid in named.items():
            if not alive(pid):
                if labelled:
                    raise RuntimeError(f"{name} (pid {pid}) exited:\n{log_tail(name)}")
                raise RuntimeError(f"{name} exited; see {home() / 'logs'}")
        try:
            if owner is not None:
                answering = answering_pid(url.rsplit("/", 1)[0] + "/health")
                if answering != named[owner]:
                    raise RuntimeError(foreign(url, owner, named[owner], answering))
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} not ready after {timeout_s} s")


def answering_pid(health_url: str) -> int | None:
    """The ``pid`` that ``GET health_url`` answers with (None: an answer without one, or
    not JSON: another program).

    Raises:
        httpx.HTTPError: no answer (nothing listens yet).
    """
    import httpx

    response = httpx.get(health_url, timeout=2)
    try:
        pid = response.json().get("pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def foreign(url: str, name: str, pid: int, answering: int | None,
            wait_s: float | None = None) -> str:
    """What ``wait_ready`` says when ``answering`` (a pid, None: unknown) answers on
    ``url``'s port in place of process ``name`` (``pid``): it waits up to ``wait_s``
    seconds (None: ``FOREIGN_WAIT_S``) for ``name`` to exit (then its log tells why),
    else stops it; either way ``name``'s pid file is removed.

    Returns:
        The message: the process, the port, who answers, and the tail of its log.
    """
    from urllib.parse import urlsplit

    deadline = time.monotonic() + (FOREIGN_WAIT_S if wait_s is None else wait_s)
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    fate = "exited" if not alive(pid) else "stopped"
    if fate == "stopped":
        stop_pid(pid, timeout_s=5.0)
    Service(name, ()).pid_file.unlink(missing_ok=True)
    who = f"pid {answering}" if answering is not None else "a pid not given"
    return (f"{name} (pid {pid}) {fate}: another process ({who}) answers on port "
            f"{urlsplit(url).port}, not the {name} started. Its log:\n{log_tail(name)}")


