"""Apply one input record: decode, step the state machine, publish, store.

The order of side effects is what makes at-least-once processing safe (DESIGN.md §3.3):
history events and dispatches are published and acknowledged first, the snapshot is
written second, the input offset is committed last (by faust). A crash between any two
replays the input against the old snapshot, which yields the same events with the same
seq and the same dispatch ids, so readers dedupe them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from headwater import events as ev
from headwater.errors import DecodeError
from headwater.machine import step
from headwater.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.inputs import decode_input
from services.coordinator.timers import TimerIndex

log = logging.getLogger(__name__)


class Bus(Protocol):
    """Where the coordinator's output goes (Kafka)."""

    async def publish(self, events: list[ev.HistoryEvent]) -> None:
        """Send history events to ``events`` and dispatches to ``tasks.<queue>``; wait for acks."""

    async def dead_letter(
        self, topic: str, partition: int, offset: int, key: bytes | None,
        value: bytes | None, headers: list[tuple[str, bytes]], reason: str,
    ) -> None:
        """Send the original record to the DLQ with a ``reason`` header; wait for the ack."""


class Store(Protocol):
    """The workflow table: one snapshot per workflow id."""

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The workflow's state, or None."""

    def put(self, state: WorkflowState) -> None:
        """Write the workflow's snapshot."""

    def forget(self, workflow_id: str) -> None:
        """Drop any cached copy, so the next ``get`` reads the table."""


class Coordinator:
    """Turns input records into history, dispatches and snapshots."""

    def __init__(self, topics: Topics, bus: Bus, store: Store, timers: TimerIndex) -> None:
        self.topics = topics
        self.bus = bus
        self.store = store
        self.timers = timers
        self.dead_lettered = 0

    async def handle(
        self, topic: str, partition: int, offset: int, key: bytes | None,
        value: bytes | None, headers: Iterable[tuple[str, bytes]] | None,
    ) -> WorkflowState | None:
        """Process one input record.

        Returns:
            The workflow's state after the record, or None when it went to the DLQ.

        Raises:
            Exception: only if publishing to Kafka fails; the input is then redelivered.
        """
        hdrs = list(headers or [])
        try:
            event = decode_input(self.topics, topic, key, value, hdrs)
        except DecodeError as e:
            await self._dead_letter(topic, partition, offset, key, value, hdrs, str(e))
            return None
        state = self.store.get(event.workflow_id)
        try:
            result = step(state, event)
        except Exception as e:  # a bug must not stop the service nor lose the input
            log.exception("state machine failed on %s", type(event).__name__)
            self.store.forget(event.workflow_id)
            await self._dead_letter(topic, partition, offset, key, value, hdrs,
                                    f"state machine error: {type(e).__name__}: {e}")
            return None
        if not result.events or result.state is None:
            return result.state
        try:
            await self.bus.publish(result.events)
        except BaseException:
            self.store.forget(event.workflow_id)  # the in-memory state ran ahead
            raise
        self.store.put(result.state)
        self.timers.arm(result.state)
        return result.state

    async def _dead_letter(
        self, topic: str, partition: int, offset: int, key: bytes | None,
        value: bytes | None, headers: list[tuple[str, bytes]], reason: str,
    ) -> None:
        log.warning("dead-lettering %s[%d]@%d: %s", topic, partition, offset, reason)
        self.dead_lettered += 1
        await self.bus.dead_letter(topic, partition, offset, key, value, headers, reason)
