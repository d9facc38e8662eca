"""The workflow table (faust ``Table``, backed by a compacted changelog topic) with an
in-memory cache of decoded states.

This process is the only writer of the workflows of the partitions it owns (DESIGN.md
§3.2), so the cache is exact until a rebalance, when it is dropped.
"""

from __future__ import annotations

from typing import Any

from headwater.snapshot import dump_state, load_state
from headwater.state import WorkflowState


class TableStore:
    """``Store`` over a faust table whose keys and values are raw bytes."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._cache: dict[str, WorkflowState] = {}

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The cached state, else the table's snapshot decoded, else None."""
        state = self._cache.get(workflow_id)
        if state is None:
            raw = self.table.get(workflow_id.encode())
            if raw is None:
                return None
            state = load_state(raw)
            self._cache[workflow_id] = state
        return state

    def put(self, state: WorkflowState) -> None:
        """Write the snapshot to the table (and so to its changelog); terminal states are
        evicted from the cache since no further event changes them."""
        self.table[state.workflow_id.encode()] = dump_state(state)
        if state.status.terminal:
            self._cache.pop(state.workflow_id, None)
        else:
            self._cache[state.workflow_id] = state

    def forget(self, workflow_id: str) -> None:
        """Drop the cached copy."""
        self._cache.pop(workflow_id, None)

    def clear_cache(self) -> None:
        """Drop every cached copy (on rebalance)."""
        self._cache.clear()

    def scan(self) -> list[WorkflowState]:
        """Decode every non-terminal snapshot held locally (for re-arming timers)."""
        states = []
        for _key, raw in list(self.table.items()):
            state = load_state(raw)
            if not state.status.terminal:
                states.append(state)
        return states
