"""A fault from outside: SIGKILL a worker while it runs an attempt.

The reports topic says which attempts are running where: a ``TaskStarted`` names its
worker (``<host>-<pid>``) and an outcome ends it. The killer waits until a supervised
worker has at least ``min_running`` attempts in flight, kills it by pid, and does that
``kills`` times, ``gap_s`` apart. The supervisor restarts the worker; the attempts it
ran are retried after their heartbeat timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field

from faultsuite.supervisor import Supervisor
from headwater.core import events as ev
from load.kafka_io import Seen, Tail

AttemptKey = tuple[str, str, int | None, int]


@dataclass
class Kill:
    """One SIGKILL sent.

    Attributes:
        service: the worker's service name.
        pid: its pid.
        in_flight: attempts it had started and not reported.
        at_s: seconds since the killer started.
    """

    service: str
    pid: int
    in_flight: int
    at_s: float


@dataclass
class WorkerKiller:
    """Kills workers mid-attempt (see the module's docstring).

    Attributes:
        supervisor: owns the workers (kills by pid, restarts them).
        bootstrap: the broker.
        reports_topic: the reports topic.
        kills: how many kills to make.
        gap_s: the least time between two kills, seconds.
        first_s: the least time before the first kill, seconds.
        min_running: the attempts in flight on a worker that make it a target.
        target: the kind of supervised process killed: ``worker``, or ``serve`` (its
            workers run inside it, and the coordinator and gateway die with them).
        done: the kills made so far.
    """

    supervisor: Supervisor
    bootstrap: str
    reports_topic: str
    kills: int
    gap_s: float = 3.0
    first_s: float = 0.5
    min_running: int = 1
    target: str = "worker"
    done: list[Kill] = field(default_factory=list)
    _running: dict[AttemptKey, str] = field(default_factory=dict)
    _tail: Tail | None = None
    _loop: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Follow the reports topic and start killing in the background."""
        self._tail = Tail(self.bootstrap, self.reports_topic, on_record=self._seen)
        await self._tail.start()
        self._loop = asyncio.create_task(self._kill_loop())

    def _seen(self, seen: Seen) -> None:
        r = seen.value
        key = (r.workflow_id, r.node, r.index, r.attempt)
        if isinstance(r, ev.TaskStarted):
            self._running[key] = r.worker
        elif isinstance(r, ev.TaskSucceeded | ev.TaskFailed):
            self._running.pop(key, None)

    async def _kill_loop(self) -> None:
        began = time.monotonic()
        last = began - self.gap_s + self.first_s
        while len(self.done) < self.kills:
            await asyncio.sleep(0.05)
            if time.monotonic() - last < self.gap_s:
                continue
            busy = Counter(_pid(w) for w in self._running.values())
            for pid, name in self.supervisor.pids(self.target).items():
                if busy.get(pid, 0) >= self.min_running and self.supervisor.kill(name) == pid:
                    self.done.append(Kill(name, pid, busy[pid], time.monotonic() - began))
                    self._running = {k: w for k, w in self._running.items() if _pid(w) != pid}
                    last = time.monotonic()
                    break

    async def stop(self) -> None:
        """Stop killing and following."""
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        if self._tail is not None:
            await self._tail.stop()


def _pid(worker: str) -> int:
    """The pid in a worker id: ``<host>-<pid>``, or ``<host>-<pid>-<queue>`` for a worker
    inside ``headwater serve`` (-1 if there is none)."""
    parts = worker.rsplit("-", 2)
    for part in reversed(parts[1:]):
        if part.isdigit():
            return int(part)
    return -1
