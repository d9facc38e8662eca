"""Keeps a sandbox's processes running while faults kill them, and says what killed each.

A background thread polls every supervised service's pid. When one has died it reads
the end of the service's log to tell why (a fault point it was armed with, a SIGKILL the
harness sent, or neither: an unexpected exit, which is a finding) and starts it again
with the same ``Service`` and environment, except ``HEADWATER_FAULTS``: the next entry of
the service's arming schedule, or nothing once the schedule is used up. A service of a
kind in ``lose_store`` comes back without its local data: its data directory
(``Sandbox.data_dir``, ``HEADWATER_DATA_DIR``: a coordinator's table store) is deleted
before it starts again, as on a machine that lost its disk.

Processes are only ever signalled by pid (the sandbox's pid files).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ops import localstack
from ops.sandbox import Sandbox
from services.common.clock import now_ms
from tests.polling import scaled

FAULTS_ENV = "HEADWATER_FAULTS"
POLL_S = 0.1
_FAULT_LINE = re.compile(r"fault point (\S+) reached \(hit (\d+)\)")
_RESTART_LINE = re.compile(r"^\[([0-9-]+ [0-9:,]+)\].*restarting: (.+)$", re.MULTILINE)


def kind(service: localstack.Service) -> str:
    """``coordinator``, ``gateway`` or ``worker`` (the part of the name before ``-``)."""
    return service.name.split("-", 1)[0]


@dataclass
class Life:
    """One process of one service, from its start to its end.

    Attributes:
        service: the service's name.
        pid: the process id.
        armed: the ``HEADWATER_FAULTS`` it was started with (``""``: none).
        started: when it started (``time.monotonic()``).
        log_offset: the size of the service's log when it started (its own lines follow).
        ended: when it was found dead (None while it runs).
        ended_ms: the same, ms since the epoch (to compare with Kafka timestamps).
        cause: why it ended: ``fault <point> (hit <n>)``, ``external SIGKILL``,
            ``stopped`` (retired by the harness) or ``unexpected exit``.
        restarts_in_place: each time it replaced itself (a coordinator's ``exec``): when
            (the log's time stamp) and why.
        store_lost: bytes of the data directory deleted before the next process of its
            service started (None: not deleted).
    """

    service: str
    pid: int
    armed: str
    started: float
    log_offset: int = 0
    ended: float | None = None
    ended_ms: int | None = None
    cause: str = ""
    restarts_in_place: list[str] = field(default_factory=list)
    store_lost: int | None = None


class Supervisor:
    """Watches and restarts a sandbox's services.

    Args:
        sandbox: the running sandbox (its services are supervised from now on).
        schedule: per service kind (``coordinator``, ``worker``, ``gateway``), the
            ``HEADWATER_FAULTS`` of each later life: entry 0 for the first restart, and so
            on; after the last, no faults. The first life's faults are the sandbox's own.
        lose_store: the service kinds whose data directory is deleted before each
            restart.
    """

    def __init__(self, sandbox: Sandbox, schedule: Mapping[str, Sequence[str]] | None = None,
                 lose_store: Collection[str] = ()) -> None:
        self.sandbox = sandbox
        self.schedule = {k: list(v) for k, v in (schedule or {}).items()}
        self.lose_store = frozenset(lose_store)
        self.lives: list[Life] = []
        self._current: dict[str, Life] = {}
        self._supervised: dict[str, localstack.Service] = {}
        self._expect_kill: set[int] = set()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        first = sandbox.env.get(FAULTS_ENV, "")
        for service in sandbox.services:
            pid = localstack.read_pid(service.pid_file)
            if pid is not None:
                self._track(service, pid, first, 0)
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)
        self._thread.start()

    def _track(self, service: localstack.Service, pid: int, armed: str,
               log_offset: int) -> None:
        life = Life(service.name, pid, armed, time.monotonic(), log_offset)
        self.lives.append(life)
        self._current[service.name] = life
        self._supervised[service.name] = service

    def start(self, service: localstack.Service, faults: str = "") -> int:
        """Start one more supervised process (e.g. a second coordinator); return its pid."""
        with self._lock:
            offset = _size(service)
            pid = self.sandbox.start(service, {FAULTS_ENV: faults})
            self._track(service, pid, faults, offset)
            return pid

    def retire(self, service: localstack.Service, timeout_s: float = 30.0) -> None:
        """Stop supervising ``service`` and stop it by pid (SIGTERM, SIGKILL after
        ``timeout_s``, scaled: see ``tests/polling.py``)."""
        with self._lock:
            self._supervised.pop(service.name, None)
            life = self._current.pop(service.name, None)
        self.sandbox.stop(service, scaled(timeout_s))
        if life is not None:
            life.ended, life.cause = time.monotonic(), "stopped"
            life.restarts_in_place = _restarts(service, life.log_offset)

    def kill(self, name: str) -> int | None:
        """SIGKILL the supervised service ``name`` by pid (it is restarted like any
        casualty); return the pid, or None if it was not running."""
        with self._lock:
            service = self._supervised.get(name)
            pid = localstack.read_pid(service.pid_file) if service else None
            if pid is None:
                return None
            self._expect_kill.add(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return pid

    def pids(self, service_kind: str | None = None) -> dict[int, str]:
        """Live supervised processes: pid -> service name (of one kind, if given)."""
        with self._lock:
            out = {}
            for name, service in self._supervised.items():
                pid = localstack.read_pid(service.pid_file)
                if pid is not None and (service_kind is None or kind(service) == service_kind):
                    out[pid] = name
            return out

    def all_running(self) -> bool:
        """Whether every supervised service has a live process."""
        with self._lock:
            return all(localstack.read_pid(s.pid_file) is not None
                       for s in self._supervised.values())

    def deaths(self) -> list[Life]:
        """The lives that ended other than by ``retire`` (so far)."""
        return [life for life in self.lives if life.ended is not None and life.cause != "stopped"]

    def close(self) -> None:
        """Stop watching (the processes keep running; ``stop_sandbox`` stops them)."""
        self._stop.set()
        self._thread.join(timeout=10)
        for name, life in self._current.items():
            service = self._supervised.get(name)
            if service is not None:
                life.restarts_in_place = _restarts(service, life.log_offset)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            with self._lock:
                for name, service in list(self._supervised.items()):
                    if localstack.read_pid(service.pid_file) is None:
                        self._restart(name, service)

    def _restart(self, name: str, service: localstack.Service) -> None:
        life = self._current[name]
        life.ended, life.ended_ms = time.monotonic(), now_ms()
        life.cause = self._cause(service, life)
        life.restarts_in_place = _restarts(service, life.log_offset)
        self._expect_kill.discard(life.pid)
        if kind(service) in self.lose_store:
            life.store_lost = delete_tree(self.sandbox.data_dir(service))
        upcoming = self.schedule.get(kind(service), [])
        faults = upcoming.pop(0) if upcoming else ""
        offset = _size(service)
        pid = self.sandbox.start(service, {FAULTS_ENV: faults})
        self._track(service, pid, faults, offset)

    def _cause(self, service: localstack.Service, life: Life) -> str:
        found = list(_FAULT_LINE.finditer(_tail(service, life.log_offset)))
        if found:
            point, hit = found[-1].groups()
            return f"fault {point} (hit {hit})"
        if life.pid in self._expect_kill:
            return "external SIGKILL"
        return "unexpected exit"


def delete_tree(path: Path) -> int:
    """Delete ``path`` and everything under it (``rm -rf``); return the bytes its files
    held (0: it did not exist)."""
    held = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) \
        if path.is_dir() else 0
    shutil.rmtree(path, ignore_errors=True)
    return held


def _size(service: localstack.Service) -> int:
    try:
        return service.log_file.stat().st_size
    except OSError:
        return 0


def _tail(service: localstack.Service, offset: int) -> str:
    try:
        with open(service.log_file, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _restarts(service: localstack.Service, offset: int) -> list[str]:
    return [f"{m.group(1)} {m.group(2).strip()}"
            for m in _RESTART_LINE.finditer(_tail(service, offset))]


