"""Apply a batch of input records: decode, step the state machine, record, carry out.

The order of side effects is what makes at-least-once processing safe:

1. each partition's share of the batch (table entries, history events, dispatches, stops)
   is written as one intent into the table (``wal``) and acknowledged;
2. then carried out: the entries written and the records published, together;
3. then the intent is cleared, and faust commits the input offsets (every 0.5 s).

After a crash the new owner carries out any intent left in the table before it reads
inputs, and the inputs since the last commit come again:

- those whose effects were recorded are skipped: each workflow's snapshot remembers the
  offset of the last input applied to it, per input topic (``Store.applied``, kept in
  the workflow's header entry).
  Applying such an input to the newer snapshot could record something else under a seq
  already published (a failure report, applied again after the retry it caused, would
  be "superseded");
- those whose intent never landed had no effect anywhere: they are applied again, in
  whatever order faust now delivers the three input topics, to the same snapshots.
  Nothing of theirs was published, so no seq can be published twice with two bodies.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from headwater import codec
from headwater.core import events as ev
from headwater.core.fencing import stop_for
from headwater.core.idempotency import conflict
from headwater.core.machine import Step, fail, step
from headwater.core.state import WorkflowState, evolve
from headwater.errors import DecodeError
from headwater.topics import Topics
from services.common import faults
from services.coordinator.inputs import decode_input
from services.coordinator.keys import intent_key, table_entry_workflow
from services.coordinator.records import (
    RECORD_MARGIN_BYTES,
    encode_outputs,
    misplaced,
)
from services.coordinator.timers import TimerIndex
from services.coordinator.wal import Intent, Journal, Outgoing, Unreadable
from services.coordinator.writeset import touched_parts

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


class Fenced(Exception):
    """This process must not write any more (its partitions may belong to another)."""


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

    def applied(self, workflow_id: str) -> dict[str, int]:
        """Input topic -> offset of the last record applied to the workflow."""

    def entries(self, state: WorkflowState, parts: set[str],
                applied: dict[str, int]) -> list[tuple[bytes, bytes]]:
        """The table entries of ``state``'s changed ``parts`` and its header with the
        ``applied`` offsets (and cache both)."""

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries in order (None deletes); futures resolve once durable."""

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry, or None."""

    def partition(self, workflow_id: str) -> int:
        """The partition of the workflow's entries."""

    def forget(self, workflow_id: str) -> None:
        """Drop any cached copy."""

    def clear_cache(self) -> None:
        """Drop every cached copy."""


class Coordinator:
    """Turns input records into history, dispatches and snapshots."""

    def __init__(self, topics: Topics, bus: Bus, store: Store, timers: TimerIndex,
                 max_record_bytes: int, fence: Callable[[], str | None] = lambda: None,
                 ) -> None:
        """``fence`` says why this process must not write any more (``PauseWatch.check``),
        or None; it is asked before each intent and before carrying one out."""
        self.topics = topics
        self.fence = fence
        self.max_record_bytes = max_record_bytes
        self.bus = bus
        self.store = store
        self.timers = timers
        self.journal = Journal(store)
        # murmur2 in pure Python, asked once per input and per output record: remembered
        self._partition = functools.lru_cache(maxsize=1 << 16)(store.partition)
        self._effects = asyncio.Lock()  # one batch's effects at a time, recovery included
        self._clearing: list[Awaitable[Any]] = []  # the last batch's slots being emptied
        self.replayed = 0
        """Records skipped because they had been applied before (redelivered)."""
        self.redone = 0
        """Intents carried out again after a crash (partitions)."""

    async def recover(self, partitions: set[int]) -> None:
        """Carry out the intents left in the slots of ``partitions`` by a batch that did
        not finish (the process died, or the partitions moved here); call before reading
        their inputs. A slot that cannot be read (corrupt) goes to the dead-letter topic,
        with the reason, and is emptied: its batch's inputs are then applied again.

        Raises:
            Exception: publishing or writing failed.
        """
        async with self._effects:
            self._check_fence()
            pending, unreadable = self.journal.pending(partitions)
            if not pending and not unreadable:
                return
            log.warning("carrying out the unfinished intents of partitions %s",
                        sorted(pending))
            dead = [self._dead_intent(p, u) for p, u in sorted(unreadable.items())]
            for d in dead:
                log.error("dead-lettering %s", d.reason)
            self.store.clear_cache()
            await self._carry_out(pending, dead)
            faults.point("coordinator.after_redo")
            self.redone += len(pending)
            await asyncio.gather(*self.journal.clear([*pending, *unreadable]))
            redone = {table_entry_workflow(k) for i in pending.values() for k, _ in i.entries}
            for wid in redone:
                state = self.store.get(wid)
                if state is not None:  # its timers may have been armed before the redo
                    self.timers.arm(state)

    def _dead_intent(self, partition: int, unreadable: Unreadable) -> DeadLetter:
        """A dead letter holding an unreadable slot: its head, then its chunks."""
        value = b"".join([unreadable.head, *unreadable.chunks])
        return DeadLetter(InputRecord(f"{self.topics.coordinator_app_id}-intents", partition,
                                      -1, intent_key(partition), value, []), unreadable.reason)

    async def handle_batch(self, records: Iterable[InputRecord]) -> None:
        """Apply records in order; record each partition's effects as one intent, then
        carry them out (see the module's docstring).

        Raises:
            Exception: only if writing to Kafka fails; the batch must then not be
                committed (the caller stops the process).
        """
        replayed_before = self.replayed
        touched: dict[str, WorkflowState] = {}
        out: list[ev.HistoryEvent] = []
        encoded: list[Outgoing] = []
        dead: list[DeadLetter] = []
        inputs_of: dict[str, list[tuple[InputRecord, ev.Input]]] = {}
        applied: dict[str, dict[str, int]] = {}  # per workflow, as the batch goes
        for record in records:
            try:
                event = decode_input(self.topics, record.topic, record.key, record.value,
                                     record.headers)
            except DecodeError as e:
                dead.append(DeadLetter(record, str(e)))
                continue
            wid = event.workflow_id
            home = self._partition(wid)
            if record.partition != home:  # its reports would go elsewhere: it would hang
                dead.append(DeadLetter(record, misplaced(record.topic, record.partition, wid,
                                                           home)))
                continue
            try:
                state = touched.get(wid) or self.store.get(wid)
            except DecodeError as e:  # a snapshot we cannot read: keep the input, go on
                dead.append(DeadLetter(record, f"snapshot of {wid} is unreadable: {e}"))
                continue
            try:
                if wid not in applied:
                    applied[wid] = self.store.applied(wid)
                offsets = applied[wid]
            except DecodeError as e:
                dead.append(DeadLetter(record, f"snapshot of {wid} is unreadable: {e}"))
                continue
            if state is not None and record.offset <= offsets.get(record.topic, -1):
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
                offsets[record.topic] = record.offset
                touched[wid] = result.state
                inputs_of.setdefault(wid, []).append((record, event))
            stop = stop_for(result.state, event) if isinstance(event, ev.Report) else None
            if stop is not None:
                encoded.append(Outgoing(self.topics.worker_control, wid.encode(),
                                        codec.encode(stop)))
        for d in dead:
            log.warning("dead-lettering %s[%d]@%d: %s", d.record.topic, d.record.partition,
                        d.record.offset, d.reason)
        if self.replayed > replayed_before:
            log.warning("skipped %d inputs whose effects the table holds (delivered again "
                        "after a crash or a rebalance)", self.replayed - replayed_before)
        if not encoded and not dead:
            return
        changed = {wid: touched_parts([e for e in out if e.workflow_id == wid], state)
                   for wid, state in touched.items()}
        entries = {wid: self.store.entries(state, changed[wid], applied[wid])
                   for wid, state in touched.items()}
        for wid in [w for w, es in entries.items() if self._too_large(es)]:
            self._fail_batch(wid, inputs_of[wid], touched, entries, out, encoded, dead,
                             changed)
        intents = self._intents(entries, encoded)
        try:
            async with self._effects:
                # The last batch's slots are empty before this one's intents land: a crash
                # from here on does not carry that batch out again (its dispatches would
                # reach workers a second time).
                await asyncio.gather(*self._clearing)
                self._clearing = []
                self._check_fence()
                faults.point("coordinator.before_intent")
                await asyncio.gather(*self.journal.record(intents))
                faults.point("coordinator.after_intent")
                self._check_fence()
                await self._carry_out(intents, dead)
                faults.point("coordinator.after_publish")
                self._clearing = self.journal.clear(intents)  # awaited by the next batch
        except BaseException:
            for wid in touched:
                self.store.forget(wid)  # the cached states may be ahead of the table
            raise
        for wid, state in touched.items():
            self.timers.arm(state, changed[wid])

    def _check_fence(self) -> None:
        why = self.fence()
        if why is not None:
            raise Fenced(why)

    def _intents(self, entries: dict[str, list[tuple[bytes, bytes]]],
                 encoded: list[Outgoing]) -> dict[int, Intent]:
        """Group the batch's table entries and records by partition."""
        intents: dict[int, Intent] = {}
        for wid, parts in entries.items():
            intents.setdefault(self._partition(wid), Intent()).entries += parts
        for o in encoded:
            intents.setdefault(self._partition(o.key.decode()), Intent()).records.append(o)
        return intents

    def _too_large(self, entries: list[tuple[bytes, bytes]]) -> int:
        """The size of the largest table entry over the record limit, else 0."""
        largest = max((len(k) + len(v) for k, v in entries), default=0)
        return largest if largest > self.max_record_bytes - RECORD_MARGIN_BYTES else 0

    def _fail_batch(self, wid: str, inputs: list[tuple[InputRecord, ev.Input]],
                    touched: dict[str, WorkflowState],
                    entries: dict[str, list[tuple[bytes, bytes]]], out: list[ev.HistoryEvent],
                    encoded: list[Outgoing], dead: list[DeadLetter],
                    changed: dict[str, set[str]]) -> None:
        """A workflow whose snapshot would not fit a table entry (an output near the
        record limit, say): drop what the batch did to it, fail it as data from its state
        before the batch instead, and dead-letter the batch's last input to it. Without
        this its intent would land and never be carried out (aiokafka refuses the entry),
        on every restart."""
        size = self._too_large(entries.pop(wid))
        reason = (f"the snapshot of workflow {wid} would hold a table entry of {size} bytes, "
                  f"over the limit of {self.max_record_bytes} (HEADWATER_MAX_MESSAGE_BYTES) "
                  f"less {RECORD_MARGIN_BYTES}")
        log.error("%s; failing it", reason)
        out[:] = [e for e in out if e.workflow_id != wid]
        encoded[:] = [o for o in encoded if o.key != wid.encode()]
        touched.pop(wid)
        self.store.forget(wid)
        record, event = inputs[-1]
        dead.append(DeadLetter(record, reason))
        try:
            result = fail(self.store.load(wid), event, reason[:2000])
            outgoing = encode_outputs(self.topics, result.events, self.max_record_bytes)
        except Exception:
            log.exception("cannot fail %s either", wid)
            return
        if result.state is None or not result.events:
            return
        offsets = self.store.applied(wid)
        for r, _ in inputs:  # the batch's inputs to it are spent
            offsets[r.topic] = max(r.offset, offsets.get(r.topic, -1))
        changed[wid] = touched_parts(result.events, result.state)
        failed_entries = self.store.entries(result.state, changed[wid], offsets)
        if self._too_large(failed_entries):  # even failing it does not fit (its definition)
            self.store.forget(wid)
            return
        out.extend(result.events)
        encoded.extend(outgoing)
        touched[wid] = result.state
        entries[wid] = failed_entries

    async def _carry_out(self, intents: dict[int, Intent], dead: list[DeadLetter]) -> None:
        """Write the intents' entries and publish their records (and the dead letters);
        return once the broker has acknowledged every one."""
        writes = self.store.write([e for i in intents.values() for e in i.entries])
        await asyncio.gather(self.bus.publish([r for i in intents.values() for r in i.records],
                                              dead), *writes)

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
        self.store.forget(wid)
        state = self.store.load(wid)
        for event in out:
            if event.workflow_id == wid:
                state = evolve(state, event)
        if state is None:
            touched.pop(wid, None)
        else:
            touched[wid] = state
