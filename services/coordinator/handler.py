"""Apply a batch of input records: decode, step the state machine, publish, store.

The order of side effects is what makes at-least-once processing safe (DESIGN.md §3.3):
the batch's history events and dispatches are published and acknowledged first, then
each touched workflow's snapshot is written once, and the input offsets are committed
last (by faust, every 0.5 s). After a crash the inputs since the last commit come again:

- those whose effects were not written to the table are applied again to the snapshot
  they were first applied to, which yields the same events with the same seq and the
  same dispatch ids, so readers dedupe them;
- those whose effects were written are skipped: each workflow's snapshot remembers the
  offset of the last input applied to it, per input topic (``WorkflowState.applied``).
  Applying such an input to the newer snapshot could record something else under a seq
  already published (a failure report, applied again after the retry it caused, would
  be "superseded").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from headwater import codec
from headwater import events as ev
from headwater.errors import DecodeError
from headwater.fencing import stop_for
from headwater.idempotency import conflict
from headwater.machine import Step, fail, step
from headwater.state import WorkflowState, evolve
from headwater.topics import Topics
from services.common import faults
from services.coordinator.inputs import decode_input
from services.coordinator.timers import TimerIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputRecord:
    """One record from an input topic, as consumed."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


@dataclass(frozen=True)
class Outgoing:
    """An encoded record to publish on ``topic``."""

    topic: str
    key: bytes
    value: bytes


def encode_outputs(topics: Topics, events: list[ev.HistoryEvent],
                   max_bytes: int) -> list[Outgoing]:
    """Encode history events for ``events``; each dispatch once more for its queue's
    topic, and each cancelled attempt once more for ``worker-control`` (workers stop it).

    Raises:
        ValueError: a record does not fit its schema, or exceeds ``max_bytes``.
    """
    out: list[Outgoing] = []
    for event in events:
        key = event.workflow_id.encode()
        out.append(Outgoing(topics.events, key, codec.encode(event)))
        if isinstance(event.body, ev.TaskDispatched):
            out.append(Outgoing(topics.tasks(event.body.queue), key, codec.encode(event.body)))
        elif isinstance(event.body, ev.TaskCancelled):
            out.append(Outgoing(topics.worker_control, key, codec.encode(event.body)))
    for o in out:
        if len(o.value) > max_bytes:
            raise ValueError(f"a record of {len(o.value)} bytes exceeds the limit of "
                             f"{max_bytes} (HEADWATER_MAX_MESSAGE_BYTES)")
    return out


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not be applied, and why."""

    record: InputRecord
    reason: str


class Bus(Protocol):
    """Where the coordinator's output goes (Kafka)."""

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        """Send encoded records and dead letters; return once the broker acknowledged
        all of them."""


class Store(Protocol):
    """The workflow table."""

    def get(self, workflow_id: str) -> WorkflowState | None:
        """The workflow's state, or None."""

    def load(self, workflow_id: str) -> WorkflowState | None:
        """The workflow's state as stored, ignoring any cache."""

    def put(self, state: WorkflowState) -> list[Awaitable[Any]]:
        """Write the workflow's snapshot; return futures that resolve once it is durable."""

    def forget(self, workflow_id: str) -> None:
        """Drop any cached copy."""


class Coordinator:
    """Turns input records into history, dispatches and snapshots."""

    def __init__(self, topics: Topics, bus: Bus, store: Store, timers: TimerIndex,
                 max_record_bytes: int) -> None:
        self.topics = topics
        self.max_record_bytes = max_record_bytes
        self.bus = bus
        self.store = store
        self.timers = timers
        self.replayed = 0
        """Records skipped because they had been applied before (redelivered)."""

    async def handle_batch(self, records: Iterable[InputRecord]) -> None:
        """Apply records in order; publish everything, then write each touched workflow
        once.

        Raises:
            Exception: only if publishing to Kafka fails; the batch must then not be
                committed (the caller stops the process).
        """
        touched: dict[str, WorkflowState] = {}
        out: list[ev.HistoryEvent] = []
        encoded: list[Outgoing] = []
        dead: list[DeadLetter] = []
        for record in records:
            try:
                event = decode_input(self.topics, record.topic, record.key, record.value,
                                     record.headers)
            except DecodeError as e:
                dead.append(DeadLetter(record, str(e)))
                continue
            wid = event.workflow_id
            try:
                state = touched.get(wid) or self.store.get(wid)
            except DecodeError as e:  # a snapshot we cannot read: keep the input, go on
                dead.append(DeadLetter(record, f"snapshot of {wid} is unreadable: {e}"))
                continue
            if state is not None and record.offset <= state.applied.get(record.topic, -1):
                self.replayed += 1  # applied before a crash; its effects are in the table
                continue
            why = conflict(state, event) if isinstance(event, ev.WorkflowSubmitted) else None
            if why is not None:
                dead.append(DeadLetter(record, why))
                continue
            try:
                result = step(state, event)
                outgoing = encode_outputs(self.topics, result.events, self.max_record_bytes)
            except Exception as e:  # a bug or a record too large must not stop the service
                log.exception("cannot apply %s to %s", type(event).__name__, wid)
                reason = f"cannot apply {type(event).__name__}: {type(e).__name__}: {e}"
                dead.append(DeadLetter(record, reason))
                failed = self._fail(wid, event, out, touched, reason)
                if failed is None:
                    continue
                result, outgoing = failed
            if result.events and result.state is not None:
                out.extend(result.events)
                encoded.extend(outgoing)
                result.state.applied[record.topic] = record.offset
                touched[wid] = result.state
            stop = stop_for(result.state, event) if isinstance(event, ev.Report) else None
            if stop is not None:
                encoded.append(Outgoing(self.topics.worker_control, wid.encode(),
                                        codec.encode(stop)))
        for d in dead:
            log.warning("dead-lettering %s[%d]@%d: %s", d.record.topic, d.record.partition,
                        d.record.offset, d.reason)
        if not encoded and not dead:
            return
        faults.point("coordinator.before_publish")
        try:
            await self.bus.publish(encoded, dead)
        except BaseException:
            for wid in touched:
                self.store.forget(wid)  # the in-memory states ran ahead of the table
            raise
        faults.point("coordinator.after_publish")
        changed = {wid: set(state.dirty) for wid, state in touched.items()}
        writes = [f for state in touched.values() for f in self.store.put(state)]
        await asyncio.gather(*writes)  # durable before faust may commit the inputs
        faults.point("coordinator.after_table_write")
        for wid, state in touched.items():
            self.timers.arm(state, changed[wid])

    def _fail(self, wid: str, event: ev.Input, out: list[ev.HistoryEvent],
              touched: dict[str, WorkflowState], reason: str,
              ) -> tuple[Step, list[Outgoing]] | None:
        """After an input could not be applied, fail its workflow as data (so that it
        ends, and a timer cannot fire the same input again and again).

        Returns:
            The failing step and its encoded records, or None when even that cannot be
            recorded (the input is then only dead-lettered).
        """
        self._rebuild(wid, out, touched)
        try:
            result = fail(touched.get(wid), event, reason[:2000])
            return result, encode_outputs(self.topics, result.events, self.max_record_bytes)
        except Exception:
            log.exception("cannot fail %s either", wid)
            self._rebuild(wid, out, touched)
            return None

    def _rebuild(self, wid: str, out: list[ev.HistoryEvent],
                 touched: dict[str, WorkflowState]) -> None:
        """After a failed step the in-memory state may be half-changed: rebuild it from
        the stored snapshot and this batch's events so far, which evolve exactly."""
        applied = touched[wid].applied if wid in touched else None
        self.store.forget(wid)
        state = self.store.load(wid)
        for event in out:
            if event.workflow_id == wid:
                state = evolve(state, event)
        if state is None:
            touched.pop(wid, None)
        else:
            if applied is not None:  # the batch's inputs applied so far stay applied
                state.applied = dict(applied)
            touched[wid] = state
