"""Durable timers: armed from workflow snapshots, fired as ``TimerFired`` records.

Three kinds, all derived from the workflow state, so they survive any crash: the retry
timers the state machine scheduled (``state.timers``), the deadline and lease of
each unfinished attempt (``state.task_timers``), and the run's own deadline
(``state.deadline_at_ms``, until the run ends: ``RUN_DEADLINE_TIMER``). This index
only remembers when to look. Firing means producing a ``TimerFired`` to the control
topic, so the firing goes through the log like every other input; the state machine
checks the timer again when it arrives, so a duplicate or early firing changes nothing.
``TimerLoop`` does the firing.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from headwater.core import events as ev
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.core.ids import LEASE_TIMER, parse_task_timer_id
from headwater.core.machine import LeaseSeen
from headwater.core.state import WorkflowState, task_timers
from services.common.clock import now_ms

STOOD_STILL_S = 1.0
"""A gap between two ticks of the timer loop longer than this, seconds, means the process
stood still (its interval is 50 ms): every lease then starts anew."""
log = logging.getLogger("headwater.coordinator")


@dataclass(order=True)
class _Due:
    fire_at_ms: int
    workflow_id: str = field(compare=False)
    timer_id: str = field(compare=False)


class TimerIndex:
    """A heap of pending timers of the workflows this process owns.

    A timer that moves (a lease renewed by a heartbeat) or goes away (its attempt ended)
    leaves its old heap entry behind; entries that no longer match ``_current`` are
    dropped when they come up, so they never fire.
    """

    def __init__(self) -> None:
        self._heap: list[_Due] = []
        self._current: dict[tuple[str, str], int] = {}
        self._by_task: dict[tuple[str, str], set[str]] = {}
        self._renewed: dict[tuple[str, str], int] = {}
        """Leases moved by heartbeats kept out of the history: (workflow id, lease timer
        id) -> its expiry (``machine.reports.lease_renewal``)."""
        self.leases_from_ms = 0
        """No lease ends sooner than its heartbeat timeout after this time (ms since the
        epoch). Set when this process takes over partitions: the heartbeats sent while no
        coordinator read them are still queued on ``reports``, behind the timers it
        would fire, so every running attempt gets one full heartbeat timeout to show
        up again."""

    def arm(self, state: WorkflowState, task_keys: Iterable[str] | None = None) -> None:
        """Remember the timers of ``state``.

        Args:
            state: a workflow's state.
            task_keys: the tasks that changed (their deadlines and leases are re-derived);
                None re-derives every task (after a rebalance).
        """
        wid = state.workflow_id
        for timer_id, timer in state.timers.items():
            self._set(wid, timer_id, timer.fire_at_ms)
        if state.deadline_at_ms is not None and not state.status.terminal:
            self._set(wid, RUN_DEADLINE_TIMER, state.deadline_at_ms)  # the run's deadline
        else:
            self._current.pop((wid, RUN_DEADLINE_TIMER), None)
        keys = state.tasks.keys() if task_keys is None else task_keys
        for key in keys:
            task = state.tasks.get(key)
            implied = dict(task_timers(task, key)) if task is not None else {}
            for old in self._by_task.pop((wid, key), set()) - implied.keys():
                self._current.pop((wid, old), None)
                self._renewed.pop((wid, old), None)
            for timer_id, fire_at_ms in implied.items():
                if timer_id.startswith(LEASE_TIMER) and task is not None and task.heartbeat_ms:
                    fire_at_ms = max(fire_at_ms, self.leases_from_ms + task.heartbeat_ms,
                                     self._renewed.get((wid, timer_id), 0))
                self._set(wid, timer_id, fire_at_ms)
            if implied:
                self._by_task[(wid, key)] = set(implied)

    def renew(self, workflow_id: str, timer_id: str, fire_at_ms: int) -> None:
        """Move a lease to ``fire_at_ms`` if that is later (a heartbeat kept out of the
        history), and arm it again if it had fired; a lease of an attempt not running
        here (ended, or not yet armed) is left alone."""
        parsed = parse_task_timer_id(timer_id)
        if parsed is None or timer_id not in self._by_task.get((workflow_id, parsed[1]), ()):
            return
        key = (workflow_id, timer_id)
        self._renewed[key] = max(fire_at_ms, self._renewed.get(key, 0))
        current = self._current.get(key)
        if current is None or fire_at_ms > current:
            self._set(workflow_id, timer_id, fire_at_ms)

    def lease_seen(self, workflow_id: str, timer_id: str) -> LeaseSeen:
        """What this process saw of a lease and the history does not hold: the end the
        heartbeats it read gave it (``renew``; 0: none), and ``leases_from_ms``, from
        when every running attempt has a full lease.

        The core's screen (``machine.decide``) does not apply a lease whose
        ``TimerFired`` arrives before the end these give: it was fired by a process that
        had not read those heartbeats yet (one that stood still, or the last owner of
        the partition)."""
        return LeaseSeen(self._renewed.get((workflow_id, timer_id), 0), self.leases_from_ms)

    def _set(self, workflow_id: str, timer_id: str, fire_at_ms: int) -> None:
        if self._current.get((workflow_id, timer_id)) != fire_at_ms:
            self._current[(workflow_id, timer_id)] = fire_at_ms
            heapq.heappush(self._heap, _Due(fire_at_ms, workflow_id, timer_id))

    def pop_due(self, now_ms: int) -> list[tuple[str, str, int]]:
        """Remove and return ``(workflow_id, timer_id, fire_at_ms)`` of timers due by ``now_ms``."""
        due: list[tuple[str, str, int]] = []
        while self._heap and self._heap[0].fire_at_ms <= now_ms:
            item = heapq.heappop(self._heap)
            key = (item.workflow_id, item.timer_id)
            if self._current.get(key) == item.fire_at_ms:
                del self._current[key]
                due.append((item.workflow_id, item.timer_id, item.fire_at_ms))
        return due

    def clear(self) -> None:
        """Forget everything (on rebalance: the table is rescanned)."""
        self._heap.clear()
        self._current.clear()
        self._by_task.clear()
        self._renewed.clear()

    def __len__(self) -> int:
        return len(self._current)


class TimerLoop:
    """Fires the due timers of ``index`` as ``TimerFired`` records; after ``reset`` (a
    rebalance), re-arms every timer of the workflows held locally at the first tick that
    is not during a rebalance.

    Args:
        index: the timers to fire; its leases start anew at each ``reset``.
        scan: the non-terminal workflows held locally (``TableStore.scan``).
        send: produce a record to the control topic and wait for the ack.
        rebalancing: whether the consumer group is rebalancing now.
    """

    def __init__(self, index: TimerIndex, scan: Callable[[], list[WorkflowState]],
                 send: Callable[[ev.TimerFired], Awaitable[None]],
                 rebalancing: Callable[[], bool]) -> None:
        self.index = index
        self.scan = scan
        self.send = send
        self.rebalancing = rebalancing
        self._rescan = True
        self._last_tick: float | None = None
        self.reset()

    def reset(self) -> None:
        """Forget every timer; leases start now; rescan at the next tick."""
        self.index.clear()
        self.index.leases_from_ms = now_ms()
        self._rescan = True

    async def tick(self) -> None:
        """Re-arm from the table if a rescan is due and the group is settled; then send
        a ``TimerFired`` for each timer due (at the later of now and its time).

        A tick that comes more than ``STOOD_STILL_S`` after the last one (the process
        was stopped, or starved of CPU) starts every lease anew first (``reset``): the
        heartbeats sent meanwhile are still unread on ``reports``, and the leases that
        came due while nothing ran must not fire before they are read."""
        tick = time.monotonic()
        if self._last_tick is not None and tick - self._last_tick > STOOD_STILL_S:
            log.warning("the timer loop stood still for %.1f s: leases start anew",
                        tick - self._last_tick)
            self.reset()
        self._last_tick = tick
        if self._rescan and not self.rebalancing():
            self._rescan = False
            for state in self.scan():
                self.index.arm(state)
            # The scan's own time is no stand-still: the next tick would take it for one
            # and start every lease anew, and scan again.
            self._last_tick = time.monotonic()
        now = now_ms()
        for workflow_id, timer_id, fire_at_ms in self.index.pop_due(now):
            await self.send(ev.TimerFired(workflow_id, timer_id, max(now, fire_at_ms)))
