"""Durable timers: armed from workflow snapshots, fired as ``TimerFired`` records.

The timers themselves live in the workflow state (hence in the table and the history);
this index only remembers when to look. Firing means producing a ``TimerFired`` to the
control topic, so the firing goes through the log like every other input, and a
duplicate firing is ignored by the state machine.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from headwater.state import WorkflowState


@dataclass(order=True)
class _Due:
    fire_at_ms: int
    workflow_id: str = field(compare=False)
    timer_id: str = field(compare=False)


class TimerIndex:
    """A heap of pending timers of the workflows this process owns."""

    def __init__(self) -> None:
        self._heap: list[_Due] = []
        self._armed: set[tuple[str, str]] = set()

    def arm(self, state: WorkflowState) -> None:
        """Remember every timer of ``state`` not yet armed."""
        for timer_id, timer in state.timers.items():
            key = (state.workflow_id, timer_id)
            if key not in self._armed:
                self._armed.add(key)
                heapq.heappush(self._heap, _Due(timer.fire_at_ms, state.workflow_id, timer_id))

    def pop_due(self, now_ms: int) -> list[tuple[str, str, int]]:
        """Remove and return ``(workflow_id, timer_id, fire_at_ms)`` of timers due by ``now_ms``."""
        due: list[tuple[str, str, int]] = []
        while self._heap and self._heap[0].fire_at_ms <= now_ms:
            item = heapq.heappop(self._heap)
            self._armed.discard((item.workflow_id, item.timer_id))
            due.append((item.workflow_id, item.timer_id, item.fire_at_ms))
        return due

    def clear(self) -> None:
        """Forget everything (on rebalance: the table is rescanned)."""
        self._heap.clear()
        self._armed.clear()

    def __len__(self) -> int:
        return len(self._heap)
