"""Noticing that the coordinator was stopped for a while (SIGSTOP, a frozen container or
VM, a long swap storm), so that it does not write with state it may no longer own.

Kafka takes a member's partitions away once its session times out
(``broker_session_timeout``); a process that was stopped past that and then resumes
still holds the batch it was applying and its cached table, and, without transactions,
nothing stops its writes: it would publish events under seqs the new owner has used
(seen with a 14 s SIGSTOP). A watchdog thread ticks every ``TICK_S``; a gap between two
ticks, or since the last one, longer than ``limit_s`` means the whole process stood
still. The coordinator checks before each batch's intent and before carrying it out, and
restarts (rejoining the group) instead of writing.

A stop that begins after the check and before the intent is written leaves, once the
process resumes, an intent in the slot of a partition it no longer owns; the check after
the intent refuses to carry it out, and whoever recovers the partition later refuses it
too, as the table has moved past it (``intents``: ``Intent.moved_on``). What remains: a
stop after the second check and before the producer has sent the records. Closing that
needs fencing by the broker (Kafka transactions), not a clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("headwater.coordinator")

TICK_S = 0.2
"""How often the watchdog thread ticks, seconds."""


class FreezeWatch:
    """Remembers whether the process stood still for longer than ``limit_s`` seconds.

    Args:
        limit_s: the longest gap between ticks taken for scheduling noise, seconds.
        clock: monotonic seconds (``time.monotonic``; it counts while a process is
            stopped).
    """

    def __init__(self, limit_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_s = limit_s
        self.clock = clock
        self._last = clock()
        self.frozen_s: float | None = None
        """The longest stand-still seen, seconds (None: none)."""

    def start(self) -> FreezeWatch:
        """Tick from a daemon thread (it dies with the process)."""
        threading.Thread(target=self._run, name="freeze-watch", daemon=True).start()
        return self

    def _run(self) -> None:
        while True:
            self.tick()
            time.sleep(TICK_S)

    def tick(self) -> None:
        """Note the time; a gap since the last tick over ``limit_s`` is a stand-still."""
        now = self.clock()
        gap = now - self._last
        self._last = now
        if gap > self.limit_s:
            self.frozen_s = max(gap, self.frozen_s or 0.0)
            log.error("the process stood still for %.1f s", gap)

    def check(self) -> str | None:
        """Why this process must not write any more (a stand-still seen, or going on
        since the last tick), or None."""
        gap = self.clock() - self._last
        if gap > self.limit_s:
            return f"the process stood still for {gap:.1f} s (its partitions may be gone)"
        if self.frozen_s is not None:
            return (f"the process stood still for {self.frozen_s:.1f} s (its partitions "
                    "may be gone)")
        return None
